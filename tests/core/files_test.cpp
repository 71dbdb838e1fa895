// tests/core/files_test.cpp — whole-file reads and atomic writes: the data
// arrives intact, no temporary file is left behind, a failed write leaves the
// old file untouched, and every error names the path and what to change.
#include "core/files.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "temp_folder.hpp"

namespace deltaproof {
namespace {

using testing::TempFolder;

std::vector<std::byte> bytes_of(std::string_view text) {
  const auto view = std::as_bytes(std::span<const char>(text.data(), text.size()));
  return std::vector<std::byte>(view.begin(), view.end());
}

// Runs `action`, expects an InputError, and returns its message.
template <typename Action>
std::string input_error_of(Action action) {
  try {
    action();
  } catch (const InputError& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected an InputError";
  return "";
}

void expect_contains(const std::string& message, std::string_view fragment) {
  EXPECT_NE(message.find(fragment), std::string::npos)
      << "expected '" << fragment << "' in: " << message;
}

TEST(Files, WriteThenReadReturnsTheSameBytes) {
  TempFolder folder;
  const auto path = folder.path() / "data.bin";
  std::vector<std::byte> bytes(3 << 20);  // several read chunks
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 31 % 251);
  write_file_atomically(path, bytes);
  EXPECT_EQ(read_file_bytes(path), bytes);
  EXPECT_EQ(folder.entries(), (std::vector<std::string>{"data.bin"}));
}

TEST(Files, EmptyFile) {
  TempFolder folder;
  const auto path = folder.path() / "empty";
  write_file_atomically(path, {});
  EXPECT_TRUE(read_file_bytes(path).empty());
}

TEST(Files, OverwriteReplacesTheWholeFile) {
  TempFolder folder;
  const auto path = folder.path() / "report.json";
  write_text_atomically(path, "a long first version of the file\n");
  write_text_atomically(path, "short\n");
  EXPECT_EQ(read_file_bytes(path), bytes_of("short\n"));
  EXPECT_EQ(folder.entries(), (std::vector<std::string>{"report.json"}));
}

TEST(Files, RelativePathInTheWorkingFolder) {
  TempFolder folder;
  const auto previous = std::filesystem::current_path();
  std::filesystem::current_path(folder.path());
  write_text_atomically("relative.txt", "here");
  EXPECT_EQ(read_file_bytes("relative.txt"), bytes_of("here"));
  std::filesystem::current_path(previous);
  EXPECT_EQ(folder.entries(), (std::vector<std::string>{"relative.txt"}));
}

TEST(Files, MissingFolderIsAnInputErrorNamingThePath) {
  TempFolder folder;
  const auto path = folder.path() / "no_such_folder" / "out.safetensors";
  const std::string message = input_error_of([&] { write_text_atomically(path, "x"); });
  expect_contains(message, path.string());
  expect_contains(message, "does not exist");
  expect_contains(message, "create it");
  EXPECT_TRUE(folder.entries().empty());
}

TEST(Files, ParentThatIsAFileIsAnInputError) {
  TempFolder folder;
  write_text_atomically(folder.path() / "plain", "x");
  const auto path = folder.path() / "plain" / "out.bin";
  const std::string message = input_error_of([&] { write_text_atomically(path, "x"); });
  expect_contains(message, path.string());
  expect_contains(message, "not a folder");
  EXPECT_EQ(folder.entries(), (std::vector<std::string>{"plain"}));
}

TEST(Files, TargetThatIsAFolderIsRefusedAndLeftAlone) {
  TempFolder folder;
  const auto target = folder.path() / "existing_folder";
  std::filesystem::create_directory(target);
  write_text_atomically(target / "inside.txt", "keep me");
  const std::string message = input_error_of([&] { write_text_atomically(target, "x"); });
  expect_contains(message, target.string());
  // The failed rename removed its temporary file; the folder is untouched.
  EXPECT_EQ(folder.entries(), (std::vector<std::string>{"existing_folder"}));
  EXPECT_EQ(read_file_bytes(target / "inside.txt"), bytes_of("keep me"));
}

TEST(Files, PathWithoutAFileNameIsRefused) {
  TempFolder folder;
  const std::string message =
      input_error_of([&] { write_text_atomically(folder.path().string() + "/", "x"); });
  expect_contains(message, "add a file name");
}

// A write that fails half way (here: the file size limit, which even root
// cannot pass) leaves the existing file exactly as it was and no temp file.
TEST(Files, FailedWriteLeavesTheExistingFileUntouched) {
  TempFolder folder;
  const auto path = folder.path() / "fixture.safetensors";
  write_text_atomically(path, "original contents");

  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  struct rlimit small = saved;
  small.rlim_cur = 4096;
  const auto previous_handler = ::signal(SIGXFSZ, SIG_IGN);  // get EFBIG, not a signal
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const std::string message = input_error_of(
      [&] { write_file_atomically(path, std::vector<std::byte>(1 << 16, std::byte{0x55})); });
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
  ::signal(SIGXFSZ, previous_handler);

  expect_contains(message, path.string());
  expect_contains(message, "write failed");
  EXPECT_EQ(read_file_bytes(path), bytes_of("original contents"));
  EXPECT_EQ(folder.entries(), (std::vector<std::string>{"fixture.safetensors"}));
}

TEST(Files, UnwritableFolderIsAnInputError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into read-only folders";
  TempFolder folder;
  const auto locked = folder.path() / "locked";
  std::filesystem::create_directory(locked);
  ::chmod(locked.c_str(), 0500);
  const auto path = locked / "out.bin";
  const std::string message = input_error_of([&] { write_text_atomically(path, "x"); });
  ::chmod(locked.c_str(), 0700);
  expect_contains(message, path.string());
  expect_contains(message, "not writable");
  EXPECT_TRUE(std::filesystem::is_empty(locked));
}

TEST(Files, ReadingAMissingFileNamesIt) {
  TempFolder folder;
  const auto path = folder.path() / "missing.safetensors";
  const std::string message = input_error_of([&] { read_file_bytes(path); });
  expect_contains(message, path.string());
  expect_contains(message, "does not exist");
}

TEST(Files, ReadingAFolderNamesIt) {
  TempFolder folder;
  const std::string message = input_error_of([&] { read_file_bytes(folder.path()); });
  expect_contains(message, folder.path().string());
  expect_contains(message, "folder");
}

}  // namespace
}  // namespace deltaproof
