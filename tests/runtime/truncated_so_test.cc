// Module::load on damaged libraries: a real exported library cut short at several points
// (in the ELF header, in the program headers, in a loadable segment), files that are not
// ELF shared objects of this machine, and things that are not files. Each is a loom::Error
// naming the file and the problem, and `loom run` exits 1 on it; never a SIGBUS inside
// dlopen (which maps pages past the end of a truncated file).
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/cli_test_util.h"
#include "common/process_util.h"
#include "loom/loom.h"

namespace loom {
namespace {

namespace fs = std::filesystem;
using runtime::Module;

const fs::path& work_dir() { return test::scratch_dir("loom-truncated-so-test"); }

/// A library written by export_library: out[i] = in[i] + 1 over 64 floats.
const fs::path& exported_library() {
  static const fs::path path = [] {
    te::Tensor A = te::placeholder({64}, DataType::Float(32), "A");
    te::Tensor B = te::compute(
        {64}, [&](te::Var i) { return A(i) + te::Expr(1.0f); }, "B");
    Schedule s = create_schedule({B});
    fs::path p = work_dir() / "add_one.so";
    codegen::build(s, {A, B}, Target("llvm"), "add_one").export_library(p.string());
    return p;
  }();
  return path;
}

std::string bytes_of(const fs::path& p) { return test::read_file(p); }

fs::path write(const std::string& name, const std::string& bytes) {
  fs::path p = work_dir() / name;
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
  return p;
}

/// The message of the loom::Error Module::load throws for `p` ("" if it loads).
std::string load_error(const fs::path& p) {
  try {
    Module::load(p.string());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class TruncatedSo : public ::testing::Test {
 protected:
  void SetUp() override {
    lib_ = bytes_of(exported_library());
    ASSERT_GE(lib_.size(), sizeof(Elf64_Ehdr));
    std::memcpy(&eh_, lib_.data(), sizeof eh_);
    ASSERT_EQ(eh_.e_phentsize, sizeof(Elf64_Phdr));
    ph_.resize(eh_.e_phnum);
    std::memcpy(ph_.data(), lib_.data() + eh_.e_phoff, eh_.e_phnum * sizeof(Elf64_Phdr));
  }

  /// The library cut to `n` bytes, written as `name`.
  fs::path cut(const std::string& name, size_t n) { return write(name, lib_.substr(0, n)); }

  std::string lib_;
  Elf64_Ehdr eh_{};
  std::vector<Elf64_Phdr> ph_;
};

TEST_F(TruncatedSo, TheWholeLibraryLoads) {
  Module m = Module::load(exported_library().string());
  runtime::NDArray a = runtime::NDArray::empty({64}, DataType::Float(32)),
                   b = runtime::NDArray::empty({64}, DataType::Float(32));
  for (int i = 0; i < 64; ++i) a.set(i, i);
  m.get_function("add_one").call({a.dltensor(), b.dltensor()});
  EXPECT_EQ(b.get(63), 64.0);
}

TEST_F(TruncatedSo, CutsAreErrorsNamingTheFile) {
  // The last loadable segment with bytes in the file: cut in its middle.
  const Elf64_Phdr* last = nullptr;
  for (const auto& p : ph_)
    if (p.p_type == PT_LOAD && p.p_filesz > 1 && (!last || p.p_offset > last->p_offset)) last = &p;
  ASSERT_NE(last, nullptr);
  const size_t ph_end = eh_.e_phoff + eh_.e_phnum * sizeof(Elf64_Phdr);
  struct Case {
    std::string name;
    size_t size;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"empty.so", 0, "not an ELF file"},
      {"magic_only.so", 4, "truncated in the ELF header"},
      {"in_ident.so", 10, "truncated in the ELF header"},
      {"in_header.so", 40, "truncated in the ELF header"},
      {"in_phdrs.so", eh_.e_phoff + sizeof(Elf64_Phdr) + 8, "before its program headers"},
      {"after_phdrs.so", ph_end, "before the end of its loadable segment"},
      {"mid_segment.so", last->p_offset + last->p_filesz / 2, "before the end of its loadable segment"},
      {"one_short.so", lib_.size() - 1, "truncated or damaged"},
  };
  for (const Case& c : cases) {
    ASSERT_LT(c.size, lib_.size()) << c.name;
    fs::path p = cut(c.name, c.size);
    std::string e = load_error(p);
    EXPECT_NE(e.find(p.string()), std::string::npos) << c.name << ": " << e;
    EXPECT_NE(e.find(c.want), std::string::npos) << c.name << ": " << e;
  }
}

TEST_F(TruncatedSo, FilesThatAreNotLibrariesOfThisMachine) {
  std::string e = load_error(write("text.so", "this is a text file, not a library\n"));
  EXPECT_NE(e.find("text.so': not a shared library of this machine: not an ELF file"), std::string::npos) << e;

  std::string wrong_class = lib_;
  wrong_class[EI_CLASS] = ELFCLASS32;
  e = load_error(write("class32.so", wrong_class));
  EXPECT_NE(e.find("a 32-bit ELF file"), std::string::npos) << e;

  std::string wrong_order = lib_;
  wrong_order[EI_DATA] = wrong_order[EI_DATA] == ELFDATA2LSB ? ELFDATA2MSB : ELFDATA2LSB;
  e = load_error(write("order.so", wrong_order));
  EXPECT_NE(e.find("byte order"), std::string::npos) << e;

  std::string wrong_machine = lib_;
  const uint16_t other = eh_.e_machine == EM_AARCH64 ? EM_X86_64 : EM_AARCH64;
  std::memcpy(wrong_machine.data() + offsetof(Elf64_Ehdr, e_machine), &other, 2);
  e = load_error(write("machine.so", wrong_machine));
  EXPECT_NE(e.find("built for "), std::string::npos) << e;

  std::string executable = lib_;
  const uint16_t exec = ET_EXEC;
  std::memcpy(executable.data() + offsetof(Elf64_Ehdr, e_type), &exec, 2);
  e = load_error(write("exec.so", executable));
  EXPECT_NE(e.find("not a shared object"), std::string::npos) << e;

  // A segment claiming bytes past the end of an otherwise whole file.
  std::string grown = lib_;
  for (size_t i = 0; i < ph_.size(); ++i)
    if (ph_[i].p_type == PT_LOAD) {
      Elf64_Phdr p = ph_[i];
      p.p_filesz = lib_.size() + 4096;
      p.p_memsz = std::max(p.p_memsz, p.p_filesz);
      std::memcpy(grown.data() + eh_.e_phoff + i * sizeof(Elf64_Phdr), &p, sizeof p);
      break;
    }
  e = load_error(write("grown.so", grown));
  EXPECT_NE(e.find("before the end of its loadable segment"), std::string::npos) << e;
}

TEST_F(TruncatedSo, ThingsThatAreNotFiles) {
  fs::create_directories(work_dir() / "dir.so");
  std::string e = load_error(work_dir() / "dir.so");
  EXPECT_NE(e.find("not a regular file (a directory)"), std::string::npos) << e;
  e = load_error("/dev/zero");
  EXPECT_NE(e.find("'/dev/zero': not a regular file"), std::string::npos) << e;
  e = load_error(work_dir() / "missing.so");
  EXPECT_NE(e.find("no such file"), std::string::npos) << e;
}

// `loom run` and `loom bench --so` go through Module::load: exit 1 with the message, not a signal.
TEST_F(TruncatedSo, LoomRunAndBenchExitOne) {
  ASSERT_TRUE(fs::exists(test::kLoom)) << test::kLoom << " was not built (target loom_cli)";
  const Elf64_Phdr* first = nullptr;
  for (const auto& p : ph_)
    if (p.p_type == PT_LOAD && p.p_filesz > 1) {
      first = &p;
      break;
    }
  ASSERT_NE(first, nullptr);
  for (const fs::path& p :
       {cut("run_header.so", 30), cut("run_phdrs.so", eh_.e_phoff + 10),
        cut("run_segment.so", first->p_offset + first->p_filesz / 2), write("run_text.so", "text\n")}) {
    std::string out;
    int rc = test::run({test::kLoom, "run", p.string()}, test::host_env(), &out, 60);
    EXPECT_EQ(rc, 1) << p << ":\n" << out;
    EXPECT_NE(out.find(p.string()), std::string::npos) << out;
  }
  std::string out;
  fs::path p = cut("bench_segment.so", first->p_offset + first->p_filesz / 2);
  int rc = test::run({test::kLoom, "bench", "--op", "matmul", "--shape", "8,8,8", "--repeat", "1", "--so", p.string()},
                     test::host_env(), &out, 120);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("truncated or damaged"), std::string::npos) << out;
}

}  // namespace
}  // namespace loom
