// Tuning logs on disk: the atomic appender and the tolerant reader.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <ostream>

#include "loom/records/record.h"
#include "loom/records/record_check.h"

namespace loom::records {

namespace {

/// An exclusive flock(2) on an open file for the lifetime of the object (best effort: a
/// file system without flock leaves writes unlocked, as O_APPEND alone would).
class FileLock {
 public:
  explicit FileLock(int fd) : fd_(fd) {
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~FileLock() { ::flock(fd_, LOCK_UN); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

RecordCheck& record_check() {
  static RecordCheck check;
  return check;
}

}  // namespace

void set_record_check(RecordCheck check) { record_check() = std::move(check); }

LogWriter::LogWriter(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("cannot open tuning log '{}' for appending: {}", path, std::strerror(errno));
  // A job killed mid-write leaves a last line without its newline; end it so that our first
  // record starts a line of its own (the reader then skips only the torn one). Writers hold
  // an exclusive flock(2) while they append, so the size seen here is never that of a record
  // half copied in by a live writer (Linux grows the file page by page during a write).
  FileLock lock(fd_);
  struct stat st;
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) return;
  int rd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (rd < 0) return;
  char last = '\n';
  bool torn = ::pread(rd, &last, 1, st.st_size - 1) == 1 && last != '\n';
  ::close(rd);
  if (torn) {
    ssize_t n;
    do n = ::write(fd_, "\n", 1);
    while (n < 0 && errno == EINTR);
  }
}

LogWriter::~LogWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void LogWriter::write(const Record& r) {
  std::string line;
  if (r.loom_version.empty()) {
    Record copy = r;
    copy.loom_version = loom_version();
    line = copy.to_json();
  } else {
    line = r.to_json();
  }
  line += '\n';
  // One write(2) of the whole line at the end (O_APPEND), under the writers' flock: concurrent
  // writers, threads or processes, never interleave, and a killed writer's lock goes with it.
  // The loop only finishes a partial write or retries after a signal.
  FileLock lock(fd_);
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot append to tuning log '{}': {}", path_, std::strerror(errno));
    }
    p += n;
    left -= size_t(n);
  }
}

LogContents read_log(const std::string& path, std::ostream* warn) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) fail("cannot read tuning log '{}': it is a directory", path);
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read tuning log '{}': {}", path, errno ? std::strerror(errno) : "cannot open it");
  LogContents out;
  std::string line;
  size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    std::string reason;
    try {
      Record r = Record::from_json(line);
      if (record_check()) reason = record_check()(r);
      if (reason.empty()) {
        out.records.push_back(std::move(r));
        continue;
      }
    } catch (const SchemaVersionError& e) {
      reason = fmt::format("schema version {} (this loom reads {} to {})", e.version(), kOldestSchemaVersion,
                           kSchemaVersion);
    } catch (const Error& e) {
      reason = e.what();
    }
    std::string w = fmt::format("{}:{}: skipped: {}", path, lineno, reason);
    if (warn) *warn << w << '\n';
    out.warnings.push_back(std::move(w));
  }
  if (in.bad()) fail("error reading tuning log '{}': {}", path, std::strerror(errno));
  return out;
}

}  // namespace loom::records
