// Syntax colouring of generated kernel source in the kernels panel.
#include <gtest/gtest.h>

#include <string>

#include "gui/viewmodel/source_highlight.h"

namespace loupe::view {
namespace {

// "kind:text" for each span that is not Other, for readable expectations.
std::vector<std::string> coloured(std::string_view source) {
  static const char* const kNames[] = {"keyword", "type", "number", "comment",
                                       "string",  "pre",  "other"};
  std::vector<std::string> out;
  for (const SourceSpan& span : highlightCpp(source))
    if (span.kind != TokenKind::Other)
      out.push_back(std::string(kNames[static_cast<int>(span.kind)]) + ":" +
                    std::string(source.substr(span.begin, span.end - span.begin)));
  return out;
}

using Tokens = std::vector<std::string>;

TEST(SourceHighlight, ColoursAGeneratedKernel) {
  const std::string kernel = "#include <cmath>\n"
                             "// k0: fused add + gelu\n"
                             "extern \"C\" void k0(const float* __restrict__ a, int64_t n) {\n"
                             "  for (int64_t i = 0; i < n; ++i) a[i] = 0.5f * 1e-3 + 0x1F;\n"
                             "}\n";
  EXPECT_EQ(coloured(kernel),
            (Tokens{"pre:#include <cmath>", "comment:// k0: fused add + gelu", "keyword:extern",
                    "string:\"C\"", "type:void", "keyword:const", "type:float",
                    "keyword:__restrict__", "type:int64_t", "keyword:for", "type:int64_t",
                    "number:0", "number:0.5f", "number:1e-3", "number:0x1F"}));
}

TEST(SourceHighlight, SpansCoverTheTextAndNeverCrossALine) {
  const std::string text =
      "/* a block\n comment */ int x = 'c'; // end\n\"unterminated\n# not at line start? #x\n";
  const std::vector<SourceSpan> spans = highlightCpp(text);
  size_t at = 0;
  for (const SourceSpan& span : spans) {
    EXPECT_EQ(span.begin, at);
    EXPECT_LT(span.begin, span.end);
    const std::string piece = text.substr(span.begin, span.end - span.begin);
    EXPECT_TRUE(piece == "\n" || piece.find('\n') == std::string::npos) << piece;
    at = span.end;
  }
  EXPECT_EQ(at, text.size());
  EXPECT_EQ(coloured(text),
            (Tokens{"comment:/* a block", "comment: comment */", "type:int", "string:'c'",
                    "comment:// end", "string:\"unterminated", "pre:# not at line start? #x"}));
}

TEST(SourceHighlight, EmptyAndBinaryTextNeverFail) {
  EXPECT_TRUE(highlightCpp("").empty());
  const std::string junk("\x01\xff\"\\", 4);
  size_t covered = 0;
  for (const SourceSpan& span : highlightCpp(junk))
    covered += span.end - span.begin;
  EXPECT_EQ(covered, junk.size());
}

TEST(SourceHighlight, AKernelIsSplitAtItsSharedPreludeAndColouredOnce) {
  const std::string prelude =
      "#ifndef LOUPE_KERNEL_PRELUDE\n#define LOUPE_KERNEL_PRELUDE\n#endif\n";
  const std::string body = "void k0(float* a) { a[0] = 1; }\n";
  const std::string source = prelude + "\n\n" + body;
  const HighlightedKernel k = highlightKernel(source);
  EXPECT_EQ(source.substr(0, k.preludeEnd), prelude);
  EXPECT_EQ(source.substr(k.bodyStart), body) << "the blank lines between are dropped";
  EXPECT_EQ(k.prelude, highlightCpp(prelude));
  EXPECT_EQ(k.body, highlightCpp(body));

  const HighlightedKernel plain = highlightKernel(body);
  EXPECT_EQ(plain.preludeEnd, 0u);
  EXPECT_EQ(plain.bodyStart, 0u);
  EXPECT_TRUE(plain.prelude.empty());
  EXPECT_EQ(plain.body, highlightCpp(body));
}

} // namespace
} // namespace loupe::view
