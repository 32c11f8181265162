#include "gui/viewmodel/search.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace loupe::view {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string withoutSpaces(std::string text) {
  std::erase_if(text, [](unsigned char c) { return std::isspace(c); });
  return text;
}

bool contains(std::string_view haystack, const std::string& needle) {
  return lower(haystack).find(needle) != std::string::npos;
}

bool nameIs(const Box& box, std::string text) {
  if (!text.empty() && text.front() == '%') text.erase(0, 1);
  return lower(box.name) == text;
}

// "14" matches line 14 of any file; "mlp.py:14" (or "mlp.py") also needs the file name.
bool lineIs(const Box& box, const std::string& text) {
  if (box.loc.line <= 0) return false;
  const std::string line = std::to_string(box.loc.line);
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos)
    return text == line || (!text.empty() && !std::isdigit(static_cast<unsigned char>(text[0])) &&
                            contains(box.loc.file, text));
  return text.substr(colon + 1) == line && contains(box.loc.file, text.substr(0, colon));
}

constexpr std::array<std::pair<std::string_view, SearchField>, 5> kPrefixes{{
    {"op:", SearchField::Op},
    {"name:", SearchField::Name},
    {"shape:", SearchField::Shape},
    {"line:", SearchField::Line},
    {"module:", SearchField::Module},
}};

} // namespace

SearchQuery SearchQuery::parse(std::string_view query) {
  std::string text = lower(query);
  const size_t first = text.find_first_not_of(" \t");
  text.erase(0, std::min(first, text.size()));
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.pop_back();
  for (const auto& [prefix, field] : kPrefixes)
    if (text.starts_with(prefix)) {
      std::string rest = text.substr(prefix.size());
      rest.erase(0, std::min(rest.find_first_not_of(' '), rest.size()));
      return {field, rest};
    }
  return {SearchField::Any, text};
}

bool SearchQuery::matches(const Box& box) const {
  if (text.empty()) return false;
  switch (field) {
  case SearchField::Op:
    return contains(box.op, text);
  case SearchField::Name:
    return nameIs(box, text);
  case SearchField::Shape:
    return withoutSpaces(lower(box.resultTypes)).find(withoutSpaces(text)) != std::string::npos;
  case SearchField::Line:
    return lineIs(box, text);
  case SearchField::Module:
    return contains(box.loc.module_path, text);
  case SearchField::Any:
    break;
  }
  return contains(box.op, text) || contains("%" + box.name, text) ||
         contains(box.resultTypes, text) || lineIs(box, text) ||
         contains(box.loc.module_path, text);
}

std::vector<int> searchBoxes(const GraphModel& model, std::string_view query) {
  const SearchQuery parsed = SearchQuery::parse(query);
  std::vector<int> found;
  for (size_t i = 0; i < model.boxes().size(); ++i)
    if (parsed.matches(model.boxes()[i])) found.push_back(static_cast<int>(i));
  return found;
}

int SearchCursor::current() const {
  return results_.empty() ? -1 : results_[static_cast<size_t>(position_)];
}

int SearchCursor::next() {
  if (!results_.empty()) position_ = (position_ + 1) % static_cast<int>(results_.size());
  return current();
}

int SearchCursor::previous() {
  if (!results_.empty())
    position_ =
        (position_ + static_cast<int>(results_.size()) - 1) % static_cast<int>(results_.size());
  return current();
}

} // namespace loupe::view
