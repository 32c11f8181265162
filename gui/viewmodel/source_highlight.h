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

// A generated kernel's source split into the guarded prelude every generated kernel shares
// (compiler/codegen/cpu) and the kernel's own code after it, each coloured once when the
// compile's details are read, so the panel draws it every frame without lexing it again.
struct HighlightedKernel {
  size_t preludeEnd = 0;                 // source[0, preludeEnd) is the prelude; 0: there is none
  size_t bodyStart = 0;                  // source[bodyStart, end) is the kernel's own code
  std::vector<SourceSpan> prelude, body; // offsets relative to the start of each part
};

HighlightedKernel highlightKernel(std::string_view source);

} // namespace loupe::view
