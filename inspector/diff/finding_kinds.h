// The kinds of finding (finding_kinds.def) as an enum and a constexpr table: each kind's name
// (the JSON `kind`), its base scores and its one-line description. Scoring, the docs and
// `loupe diff --help` all read this table, so a kind is added or re-ranked in one place.
#pragma once

#include <array>
#include <string_view>

namespace loupe::diff {

enum class FindingKind {
#define FINDING_KIND(id, name, base, weakBase, severity, doc) id,
#include "inspector/diff/finding_kinds.def"
#undef FINDING_KIND
};

// How much a finding weighs on the verdict: a comparison with a Warning or an Error differs
// (exit status 1); Notes alone leave it the same.
enum class Severity { Note, Warning, Error };

constexpr std::string_view severityName(Severity severity) {
  switch (severity) {
  case Severity::Note:
    return "note";
  case Severity::Warning:
    return "warning";
  case Severity::Error:
    return "error";
  }
  return "";
}

struct FindingKindInfo {
  FindingKind kind;
  std::string_view name;
  double base;     // the score a finding of this kind starts from
  double weakBase; // the base of an instance that is weak evidence; 0: the kind has none
  Severity severity;
  std::string_view doc;
};

inline constexpr std::array kFindingKinds = {
#define FINDING_KIND(id, name, base, weakBase, severity, doc)                                      \
  FindingKindInfo{FindingKind::id, name, base, weakBase, Severity::severity, doc},
#include "inspector/diff/finding_kinds.def"
#undef FINDING_KIND
};

// The table is the ranking: rows in enum order, highest base first, a weak base below its base.
consteval bool rowsRankedByBase() {
  for (size_t i = 0; i < kFindingKinds.size(); ++i) {
    const FindingKindInfo& k = kFindingKinds[i];
    if (static_cast<size_t>(k.kind) != i || k.weakBase >= k.base) return false;
    if (i > 0 && kFindingKinds[i - 1].base < k.base) return false;
  }
  return true;
}
static_assert(rowsRankedByBase(), "finding_kinds.def: keep rows ordered by base, highest first");

constexpr const FindingKindInfo& findingKindInfo(FindingKind kind) {
  return kFindingKinds[static_cast<size_t>(kind)];
}

constexpr std::string_view findingKindName(FindingKind kind) {
  return findingKindInfo(kind).name;
}

} // namespace loupe::diff
