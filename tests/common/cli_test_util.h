// The fixture of tests that run the `loom` binary as a user does: a scratch directory per
// test and the command's exit status and output.
#pragma once
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace loom::test {

inline const std::string kLoom = LOOM_BINARY_DIR "/tools/loom";

struct Result {
  int rc = -1;
  std::string out, err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream is(p);
  std::stringstream ss;
  ss << is.rdbuf();
  return ss.str();
}

/// A scratch directory for one test, removed afterwards.
class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(kLoom)) << kLoom << " was not built (target loom_cli)";
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("loom_cli_test_" + std::to_string(::getpid()) + "_" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  /// Runs `loom ARGS` (a shell word list) and returns its exit status and output.
  Result loom(const std::string& args) {
    Result r;
    std::filesystem::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    std::string cmd = kLoom + " " + args + " >" + out.string() + " 2>" + err.string();
    int status = std::system(cmd.c_str());
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

}  // namespace loom::test

#define EXPECT_HAS(text, needle) \
  EXPECT_NE((text).find(needle), std::string::npos) << "no '" << (needle) << "' in:\n" << (text)
