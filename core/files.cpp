// core/files.cpp — whole-file reads and atomic writes on POSIX. A write goes to
// "<path>.tmp.<pid>.<random>" in the target's folder (so the final rename stays
// on one file system and is atomic), is fsync'ed, then renamed over the
// target. On any failure the temporary file is removed and the target is left
// exactly as it was.
#include "core/files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string>
#include <system_error>

#include "core/error.hpp"

namespace deltaproof {
namespace {

namespace fs = std::filesystem;

std::string os_error_text(int error_number) {
  return std::error_code(error_number, std::generic_category()).message();
}

// The folder a path lives in, spelled for a message.
std::string folder_of(const fs::path& path) {
  const fs::path parent = path.parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

[[noreturn]] void throw_read_error(const fs::path& path, int error_number) {
  const std::string os_text = os_error_text(error_number);
  switch (error_number) {
    case ENOENT:
      throw InputError(fmt::format("cannot read '{}': the file does not exist ({}); check the path",
                                   path.string(), os_text));
    case EACCES:
    case EPERM:
      throw InputError(fmt::format(
          "cannot read '{}': permission denied ({}); change its permissions or run as its owner",
          path.string(), os_text));
    case EISDIR:
      throw InputError(fmt::format("cannot read '{}': it is a folder, not a file ({}); name a file",
                                   path.string(), os_text));
    case ENOTDIR:
      throw InputError(fmt::format(
          "cannot read '{}': a component of the path is not a folder ({}); check the path",
          path.string(), os_text));
    default:
      throw InputError(fmt::format("cannot read '{}': {}; check the path and the device",
                                   path.string(), os_text));
  }
}

// `step` says which system call failed, for the default case.
[[noreturn]] void throw_write_error(const fs::path& path, const char* step, int error_number) {
  const std::string os_text = os_error_text(error_number);
  const std::string folder = folder_of(path);
  switch (error_number) {
    case ENOENT:
      throw InputError(fmt::format(
          "cannot write '{}': the folder '{}' does not exist ({}); create it or choose another "
          "output path",
          path.string(), folder, os_text));
    case EACCES:
    case EPERM:
    case EROFS:
      throw InputError(fmt::format(
          "cannot write '{}': the folder '{}' is not writable ({}); change its permissions or "
          "choose another output path",
          path.string(), folder, os_text));
    case ENOTDIR:
      throw InputError(
          fmt::format("cannot write '{}': '{}' is not a folder ({}); choose another output path",
                      path.string(), folder, os_text));
    case EISDIR:
      throw InputError(
          fmt::format("cannot write '{}': that path is an existing folder ({}); choose a file name",
                      path.string(), os_text));
    case ENOSPC:
    case EDQUOT:
      throw InputError(fmt::format(
          "cannot write '{}': the disk or quota is full ({}); free some space or choose another "
          "output path",
          path.string(), os_text));
    default:
      throw InputError(
          fmt::format("cannot write '{}': {} failed ({}); check the folder '{}' and the free space",
                      path.string(), step, os_text, folder));
  }
}

// A name no other writer picks: pid plus 64 bits mixed from the clock, a
// process-wide counter and a stack address (splitmix64's finalizer).
std::string temp_path_for(const fs::path& path) {
  static std::atomic<std::uint64_t> counter{0};
  int stack_marker = 0;
  std::uint64_t z =
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
      (counter.fetch_add(1) * 0x9e3779b97f4a7c15ull) ^
      static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&stack_marker));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return fmt::format("{}.tmp.{}.{:016x}", path.string(), static_cast<long>(::getpid()), z);
}

// Writes all of `bytes` to `fd`, retrying short writes; returns 0 or an errno.
int write_all(int fd, std::span<const std::byte> bytes) {
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    written += static_cast<std::size_t>(n);
  }
  return 0;
}

}  // namespace

std::vector<std::byte> read_file_bytes(const fs::path& path) {
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) throw_read_error(path, errno);

  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error_number = errno;
    ::close(fd);
    throw_read_error(path, error_number);
  }
  if (S_ISDIR(info.st_mode)) {
    ::close(fd);
    throw_read_error(path, EISDIR);
  }

  std::vector<std::byte> bytes;
  if (S_ISREG(info.st_mode)) bytes.reserve(static_cast<std::size_t>(info.st_size));
  constexpr std::size_t kChunkSize = 1 << 20;
  std::size_t size = 0;
  for (;;) {
    bytes.resize(size + kChunkSize);
    const ssize_t n = ::read(fd, bytes.data() + size, kChunkSize);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error_number = errno;
      ::close(fd);
      throw_read_error(path, error_number);
    }
    if (n == 0) break;
    size += static_cast<std::size_t>(n);
  }
  bytes.resize(size);
  ::close(fd);
  return bytes;
}

void write_file_atomically(const fs::path& path, std::span<const std::byte> bytes) {
  if (!path.has_filename()) {
    throw InputError(fmt::format(
        "cannot write '{}': the path names a folder, not a file; add a file name", path.string()));
  }

  std::string temp_path;
  int fd = -1;
  // O_EXCL makes the temporary name ours alone; a clash only means another try.
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    temp_path = temp_path_for(path);
    fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST && errno != EINTR) break;
  }
  if (fd < 0) throw_write_error(path, "creating a temporary file", errno);

  const auto fail = [&](const char* step, int error_number) {
    if (fd >= 0) ::close(fd);
    ::unlink(temp_path.c_str());
    throw_write_error(path, step, error_number);
  };

  if (const int error_number = write_all(fd, bytes); error_number != 0) {
    fail("write", error_number);
  }
  if (::fsync(fd) != 0) fail("fsync", errno);
  const int close_result = ::close(fd);
  fd = -1;
  if (close_result != 0) fail("close", errno);
  if (::rename(temp_path.c_str(), path.c_str()) != 0) fail("rename", errno);

  // Make the rename itself durable. Best effort: the data is already in place,
  // and some file systems refuse fsync on a folder.
  const std::string folder = folder_of(path);
  const int folder_fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (folder_fd >= 0) {
    (void)::fsync(folder_fd);
    ::close(folder_fd);
  }
}

void write_text_atomically(const fs::path& path, std::string_view text) {
  write_file_atomically(path, std::as_bytes(std::span<const char>(text.data(), text.size())));
}

}  // namespace deltaproof
