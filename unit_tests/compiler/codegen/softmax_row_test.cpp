// The attention kernels' row softmax (compiler/codegen/cpu/library/softmax_row.h): its
// vectorisable f32 exp against libm's over the whole range it is used on and at its edges, and
// the softmax and its backward against double-precision sums, masked rows included.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "compiler/codegen/cpu/library/softmax_row.h"

namespace loupe::library {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(SoftmaxExp, MatchesLibmWithinTwoUlpsOverTheShiftedScores) {
  // Every 1/1024 from 0 down to the end of the normal range, where results are normal floats.
  for (int step = 0; step <= 87 * 1024; ++step) {
    float x = -static_cast<float>(step) / 1024.0f;
    float expected = std::exp(x);
    float ulp = std::nextafter(expected, kInf) - expected;
    EXPECT_LE(std::abs(softmaxExp(x) - expected), 2 * ulp) << "x = " << x;
  }
}

TEST(SoftmaxExp, IsZeroBelowTheRangeAndAtMinusInfinityAndKeepsNaN) {
  EXPECT_EQ(softmaxExp(0.0f), 1.0f);
  EXPECT_EQ(softmaxExp(-87.5f), 0.0f);
  EXPECT_EQ(softmaxExp(-1e30f), 0.0f);
  EXPECT_EQ(softmaxExp(-kInf), 0.0f);
  EXPECT_TRUE(std::isnan(softmaxExp(std::numeric_limits<float>::quiet_NaN())));
}

// Softmax of `scores` in double: the weights and the logsumexp.
std::vector<double> referenceSoftmax(const std::vector<float>& scores, double& logSumExp) {
  double max = -kInf, sum = 0;
  for (float s : scores)
    max = std::max(max, static_cast<double>(s));
  for (float s : scores)
    sum += std::exp(s - max);
  logSumExp = max + std::log(sum);
  std::vector<double> weights;
  for (float s : scores)
    weights.push_back(std::exp(s - max) / sum);
  return weights;
}

TEST(SoftmaxRow, MatchesDoublePrecisionWithMaskedScoresAndOddLengths) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  for (int count : {2, 7, 64, 131}) {
    std::vector<float> scores(static_cast<size_t>(count));
    for (float& s : scores)
      s = normal(rng);
    scores[static_cast<size_t>(count) / 2] = -kInf; // a masked key
    double expectedLse = 0;
    std::vector<double> expected = referenceSoftmax(scores, expectedLse);
    std::vector<float> row = scores;
    float lse = softmaxRow(row.data(), count);
    EXPECT_NEAR(lse, expectedLse, 1e-5 * std::abs(expectedLse) + 1e-6) << count;
    for (size_t j = 0; j < row.size(); ++j)
      EXPECT_NEAR(row[j], expected[j], 1e-6) << count << " " << j;
  }
}

TEST(SoftmaxRow, AFullyMaskedRowReturnsMinusInfinity) {
  std::vector<float> row(5, -kInf);
  EXPECT_EQ(softmaxRow(row.data(), 5), -kInf);
}

TEST(SoftmaxBackwardRow, MatchesDoublePrecision) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<float> scores(37), grad(37);
  for (size_t j = 0; j < scores.size(); ++j) {
    scores[j] = normal(rng);
    grad[j] = normal(rng);
  }
  double lse = 0;
  std::vector<double> weights = referenceSoftmax(scores, lse);
  double dot = 0;
  for (size_t j = 0; j < weights.size(); ++j)
    dot += weights[j] * grad[j];
  std::vector<float> p(weights.begin(), weights.end()), d = grad;
  softmaxBackwardRow(p.data(), d.data(), 37, 0.5f);
  for (size_t j = 0; j < d.size(); ++j)
    EXPECT_NEAR(d[j], weights[j] * (grad[j] - dot) * 0.5, 1e-6) << j;
}

} // namespace
} // namespace loupe::library
