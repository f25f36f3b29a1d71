// Nearest names for "did you mean": edit distance and which names are near enough.
#include "loom/runtime/suggest.h"

#include <gtest/gtest.h>

namespace loom {
namespace {

TEST(Suggest, EditDistance) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("matmul", "matmul"), 0u);
  EXPECT_EQ(edit_distance("matmu", "matmul"), 1u);      // insertion
  EXPECT_EQ(edit_distance("matmull", "matmul"), 1u);    // deletion
  EXPECT_EQ(edit_distance("matmal", "matmul"), 1u);     // substitution
  EXPECT_EQ(edit_distance("mtamul", "matmul"), 2u);     // a swap is two edits
  EXPECT_EQ(edit_distance("MatMul", "matmul"), 0u);     // case is ignored
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
}

TEST(Suggest, NearestNames) {
  const std::vector<std::string> known = {"matmul", "batch_matmul", "softmax", "conv2d_nchw", "conv2d_nchwc",
                                          "dense"};
  EXPECT_EQ(nearest_names("matmu", known), std::vector<std::string>{"matmul"});
  EXPECT_EQ(nearest_names("sofmax", known), std::vector<std::string>{"softmax"});
  EXPECT_EQ(nearest_names("Dense", known), std::vector<std::string>{"dense"});
  // Close spellings, nearest first; names the input begins only when none is close.
  EXPECT_EQ(nearest_names("matmu", {"matmul_int8", "matmul"}), std::vector<std::string>{"matmul"});
  EXPECT_EQ(nearest_names("conv2d_nchv", known), (std::vector<std::string>{"conv2d_nchw", "conv2d_nchwc"}));
  EXPECT_EQ(nearest_names("conv", known), (std::vector<std::string>{"conv2d_nchw", "conv2d_nchwc"}));
  EXPECT_EQ(nearest_names("conv", known, 1), std::vector<std::string>{"conv2d_nchw"});
  EXPECT_TRUE(nearest_names("winograd", known).empty());
  EXPECT_TRUE(nearest_names("matmul", known).empty()) << "a known name needs no suggestion";
  EXPECT_TRUE(nearest_names("", known).empty());
  EXPECT_TRUE(nearest_names("x", {}).empty());
}

TEST(Suggest, DidYouMean) {
  const std::vector<std::string> known = {"tune", "build", "bench", "show"};
  EXPECT_EQ(did_you_mean("tnue", known), "did you mean 'tune'?");
  EXPECT_EQ(did_you_mean("bencj", known), "did you mean 'bench'?");
  EXPECT_EQ(did_you_mean("buil", known), "did you mean 'build'?");
  EXPECT_EQ(did_you_mean("bxxxh", known), "");
  EXPECT_EQ(did_you_mean("ab", {"ax", "ay", "az"}), "did you mean 'ax', 'ay' or 'az'?");
  EXPECT_EQ(did_you_mean("ab", {"ax", "ay"}), "did you mean 'ax' or 'ay'?");
}

}  // namespace
}  // namespace loom
