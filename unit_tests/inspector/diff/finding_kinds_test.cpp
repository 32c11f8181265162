// The finding kinds' table (inspector/diff/finding_kinds.def) against its copy in
// docs/differ.md: every kind is documented with its scores, severity and one-line description, in
// the table's order, and the docs name no kind the table lacks.
#include <algorithm>
#include <fstream>
#include <gtest/gtest.h>
#include <set>
#include <string>
#include <vector>

#include "inspector/diff/finding_kinds.h"

namespace loupe::diff {
namespace {

// A markdown table: its rows (the header first, the |---| line left out), each its cells
// without the surrounding spaces.
using Table = std::vector<std::vector<std::string>>;

std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  size_t start = 1; // after the leading '|'
  for (size_t bar = line.find('|', start); bar != std::string::npos;
       start = bar + 1, bar = line.find('|', start)) {
    std::string cell = line.substr(start, bar - start);
    size_t first = cell.find_first_not_of(' '), last = cell.find_last_not_of(' ');
    out.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
  }
  return out;
}

// The tables of docs/differ.md's "Findings" section (up to the next "## " heading).
std::vector<Table> findingsTables() {
  std::ifstream in(std::string(LOUPE_SOURCE_DIR) + "/docs/differ.md");
  EXPECT_TRUE(in) << "cannot read docs/differ.md under " << LOUPE_SOURCE_DIR;
  std::vector<Table> tables;
  bool inSection = false, inTable = false;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("## ")) inSection = line == "## Findings";
    bool tableLine = inSection && line.starts_with("|");
    if (tableLine && !inTable) tables.emplace_back();
    inTable = tableLine;
    if (tableLine && !line.starts_with("|---")) tables.back().push_back(cells(line));
  }
  return tables;
}

std::string quoted(std::string_view name) {
  return "`" + std::string(name) + "`";
}

TEST(FindingKinds, DocsListEveryKindWithItsScoresAndDescriptionInOrder) {
  const std::vector<std::string> header{"kind", "base", "weak base", "severity", "what it is"};
  std::vector<Table> tables = findingsTables();
  auto scores = std::find_if(tables.begin(), tables.end(),
                             [&](const Table& t) { return !t.empty() && t[0] == header; });
  ASSERT_NE(scores, tables.end()) << "docs/differ.md, Findings: no table headed | kind | base | "
                                     "weak base | severity | what it is |";
  ASSERT_EQ(scores->size(), kFindingKinds.size() + 1) << "one row per kind";
  for (size_t i = 0; i < kFindingKinds.size(); ++i) {
    const FindingKindInfo& kind = kFindingKinds[i];
    std::vector<std::string> expected{
        quoted(kind.name), std::to_string(static_cast<int>(kind.base)),
        kind.weakBase > 0 ? std::to_string(static_cast<int>(kind.weakBase)) : "",
        std::string(severityName(kind.severity)), std::string(kind.doc)};
    EXPECT_EQ((*scores)[i + 1], expected) << "row " << i + 1 << " should be " << kind.name;
  }
}

TEST(FindingKinds, DocsNameEveryKindAndNoOther) {
  std::set<std::string> known;
  for (const FindingKindInfo& kind : kFindingKinds)
    known.insert(quoted(kind.name));
  int kindTables = 0;
  for (const Table& table : findingsTables()) {
    if (table.empty() || table[0].empty() || table[0][0] != "kind") continue;
    ++kindTables;
    std::set<std::string> documented;
    for (size_t row = 1; row < table.size(); ++row) {
      EXPECT_TRUE(known.count(table[row][0]))
          << "docs/differ.md documents an unknown kind " << table[row][0];
      documented.insert(table[row][0]);
    }
    EXPECT_EQ(documented, known) << "a table of docs/differ.md, Findings, misses a kind";
  }
  EXPECT_EQ(kindTables, 2) << "the Findings section's kind tables: where/when, and scores";
}

TEST(FindingKinds, NamesAreUniqueAndEachKindFindsItsRow) {
  std::set<std::string_view> names;
  for (const FindingKindInfo& kind : kFindingKinds) {
    EXPECT_TRUE(names.insert(kind.name).second) << kind.name;
    EXPECT_EQ(findingKindName(kind.kind), kind.name);
  }
}

} // namespace
} // namespace loupe::diff
