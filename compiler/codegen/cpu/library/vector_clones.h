// LOUPE_VECTOR_CLONES: a library kernel's hot loop compiled twice, for x86-64-v3 (AVX2, FMA) and
// for the baseline (SSE2, which Loupe itself is built for), the one the machine runs picked once
// at load time by GCC's function multiversioning (target_clones, an ifunc). Measured on max
// pooling's strided window loop: 4 to 6x faster with AVX2; AVX-512 (x86-64-v4) was slower than
// AVX2 there, so it is not cloned (docs/cpu-codegen.md, "Library kernels"). Elsewhere (another
// architecture, Clang) the one baseline function.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LOUPE_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define LOUPE_VECTOR_CLONES
#endif
