// The comparison of two compiles' traced lines (traced_path.h), and how a message quotes them.
#include "inspector/diff/traced_path.h"

#include <algorithm>
#include <cstddef>
#include <fstream>

namespace loupe::diff {

namespace {

bool samePlace(const TracedLine& a, const TracedLine& b) {
  return a.file == b.file && a.line == b.line && a.depth == b.depth;
}

// Where a Python comment starts on the line (a `#` outside quotes), or its end.
size_t commentStart(const std::string& text) {
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote) {
      if (c == '\\')
        ++i;
      else if (c == quote)
        quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#') {
      return i;
    }
  }
  return text.size();
}

// The line's code, trimmed and without its comment, when its file is readable here; the trace
// only names the file. A long line is cut: a message stays one readable line.
std::string codeAt(const std::string& file, int line) {
  constexpr size_t kMaxCode = 120;
  std::ifstream in(file);
  std::string text;
  for (int n = 1; n <= line; ++n)
    if (!std::getline(in, text)) return {};
  text.resize(commentStart(text));
  size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return {};
  text = text.substr(begin, text.find_last_not_of(" \t\r") + 1 - begin);
  return text.size() > kMaxCode ? text.substr(0, kMaxCode) + "..." : text;
}

} // namespace

std::optional<PathParting> partingOf(const std::vector<TracedLine>& a,
                                     const std::vector<TracedLine>& b) {
  auto [endA, endB] = std::mismatch(a.begin(), a.end(), b.begin(), b.end(), samePlace);
  if (endA == a.begin() || (endA == a.end() && endB == b.end())) return std::nullopt;
  PathParting parting{.condition = *(endA - 1)};
  if (endA != a.end()) parting.nextA = *endA;
  if (endB != b.end()) parting.nextB = *endB;
  return parting;
}

std::string describeLine(const TracedLine& line, const TracedLine& relativeTo) {
  std::string name = line.file == relativeTo.file && line.function == relativeTo.function
                         ? "line " + std::to_string(line.line)
                         : line.file + ":" + std::to_string(line.line) + " in " + line.function;
  std::string code = codeAt(line.file, line.line);
  return code.empty() ? name : name + " `" + code + "`";
}

} // namespace loupe::diff
