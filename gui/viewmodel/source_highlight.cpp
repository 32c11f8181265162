#include "gui/viewmodel/source_highlight.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace loupe::view {
namespace {

constexpr std::array<std::string_view, 48> kKeywords{
    "alignas",       "alignof",   "break",    "case",         "catch",   "class",    "const",
    "constexpr",     "continue",  "default",  "delete",       "do",      "else",     "enum",
    "explicit",      "extern",    "false",    "for",          "friend",  "goto",     "if",
    "inline",        "namespace", "new",      "noexcept",     "nullptr", "operator", "private",
    "protected",     "public",    "restrict", "__restrict__", "return",  "sizeof",   "static",
    "static_assert", "struct",    "switch",   "template",     "this",    "throw",    "true",
    "try",           "typedef",   "typename", "using",        "virtual", "while"};

constexpr std::array<std::string_view, 16> kTypes{
    "auto",   "bool",     "char", "double", "float",  "int",    "long",   "short",
    "signed", "unsigned", "void", "half",   "__m256", "__m512", "__m128", "bfloat16"};

bool isIdentStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool isIdent(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

TokenKind identifierKind(std::string_view word) {
  if (std::find(kKeywords.begin(), kKeywords.end(), word) != kKeywords.end())
    return TokenKind::Keyword;
  // int64_t, size_t, ... and the library's own *_t types.
  if (std::find(kTypes.begin(), kTypes.end(), word) != kTypes.end() ||
      (word.size() > 2 && word.ends_with("_t")))
    return TokenKind::Type;
  return TokenKind::Other;
}

class Spans {
public:
  explicit Spans(std::string_view source) : source_(source) {}

  // Adds [begin, end) as kind, cut at newlines; each newline is an Other span of its own, so
  // no span crosses a line. Neighbouring Other text on one line merges into one span.
  void add(size_t begin, size_t end, TokenKind kind) {
    while (begin < end) {
      const size_t newline = source_.find('\n', begin);
      const size_t stop = std::min(end, newline == std::string_view::npos ? end : newline);
      if (stop > begin) push(begin, stop, kind);
      if (stop < end) {
        spans_.push_back({stop, stop + 1, TokenKind::Other});
        begin = stop + 1;
      } else {
        begin = stop;
      }
    }
  }
  std::vector<SourceSpan> take() { return std::move(spans_); }

private:
  void push(size_t begin, size_t end, TokenKind kind) {
    if (kind == TokenKind::Other && !spans_.empty() && spans_.back().kind == TokenKind::Other &&
        spans_.back().end == begin && source_[spans_.back().end - 1] != '\n') {
      spans_.back().end = end;
      return;
    }
    spans_.push_back({begin, end, kind});
  }

  std::string_view source_;
  std::vector<SourceSpan> spans_;
};

// The end of a quoted literal starting at `begin`, escapes skipped; the line's end when the
// literal is unterminated.
size_t quotedEnd(std::string_view s, size_t begin) {
  const char quote = s[begin];
  size_t i = begin + 1;
  while (i < s.size() && s[i] != quote && s[i] != '\n')
    i += s[i] == '\\' && i + 1 < s.size() ? 2 : 1;
  return i < s.size() && s[i] == quote ? i + 1 : i;
}

size_t numberEnd(std::string_view s, size_t i) {
  while (i < s.size()) {
    const char c = s[i];
    const bool exponentSign = (c == '+' || c == '-') && (s[i - 1] == 'e' || s[i - 1] == 'E' ||
                                                         s[i - 1] == 'p' || s[i - 1] == 'P');
    if (!isIdent(c) && c != '.' && c != '\'' && !exponentSign) break;
    ++i;
  }
  return i;
}

} // namespace

std::vector<SourceSpan> highlightCpp(std::string_view s) {
  Spans spans(s);
  bool lineStart = true; // only whitespace so far on this line
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    size_t end = i + 1;
    TokenKind kind = TokenKind::Other;
    if (c == '#' && lineStart) {
      end = s.find('\n', i);
      kind = TokenKind::Preprocessor;
    } else if (s.substr(i, 2) == "//") {
      end = s.find('\n', i);
      kind = TokenKind::Comment;
    } else if (s.substr(i, 2) == "/*") {
      end = s.find("*/", i + 2);
      end = end == std::string_view::npos ? s.size() : end + 2;
      kind = TokenKind::Comment;
    } else if (c == '"' || c == '\'') {
      end = quotedEnd(s, i);
      kind = TokenKind::String;
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < s.size() &&
                std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      end = numberEnd(s, i + 1);
      kind = TokenKind::Number;
    } else if (isIdentStart(c)) {
      while (end < s.size() && isIdent(s[end]))
        ++end;
      kind = identifierKind(s.substr(i, end - i));
    }
    end = std::min(end, s.size()); // npos: to the end of the text
    spans.add(i, end, kind);
    if (c == '\n' || (kind != TokenKind::Other && s[end - 1] == '\n'))
      lineStart = true;
    else if (!std::isspace(static_cast<unsigned char>(c)))
      lineStart = false;
    i = end;
  }
  return spans.take();
}

HighlightedKernel highlightKernel(std::string_view source) {
  constexpr std::string_view kGuard = "#ifndef LOUPE_KERNEL_PRELUDE\n", kEnd = "\n#endif\n";
  HighlightedKernel k;
  const size_t end = source.find(kEnd);
  if (source.starts_with(kGuard) && end != std::string_view::npos) {
    k.preludeEnd = end + kEnd.size();
    k.bodyStart = std::min(source.find_first_not_of('\n', k.preludeEnd), source.size());
  }
  k.prelude = highlightCpp(source.substr(0, k.preludeEnd));
  k.body = highlightCpp(source.substr(k.bodyStart));
  return k;
}

} // namespace loupe::view
