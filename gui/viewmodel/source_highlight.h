// Syntax colouring for the kernels panel: generated C++ kernel source split into spans of one
// token class each. Spans cover the text exactly, in order, and never cross a newline, so the
// panel draws line by line. A lexer, not a parser: it never fails, whatever the text.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace loupe::view {

enum class TokenKind { Keyword, Type, Number, Comment, String, Preprocessor, Other };

struct SourceSpan {
  size_t begin = 0, end = 0; // byte offsets into the source, end exclusive
  TokenKind kind = TokenKind::Other;
  friend bool operator==(const SourceSpan&, const SourceSpan&) = default;
};

std::vector<SourceSpan> highlightCpp(std::string_view source);

} // namespace loupe::view
