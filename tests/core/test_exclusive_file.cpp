// ExclusiveFile and write_file_atomically: the temporary is created exclusively and never
// through a link, replaces the destination only when complete, and is removed when the
// write does not complete; temporary_owner / temporary_owner_alive read the pid in a name.
#include "core/exclusive_file.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/error.h"

namespace hetrec {
namespace {

namespace fs = std::filesystem;

class Scratch {
 public:
  explicit Scratch(const std::string& name)
      : path_(fs::temp_directory_path() / ("hetrec_exclusive_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~Scratch() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  int entries() const {
    int n = 0;
    for (const auto& e : fs::directory_iterator(path_)) n += e.exists() || e.is_symlink();
    return n;
  }

 private:
  fs::path path_;
};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The pid of a process that has exited and been reaped.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

TEST(ExclusiveFile, WritesThroughATemporaryAndReplacesTheDestination) {
  const Scratch dir("replace");
  const std::string dest = dir.file("out.json");
  std::ofstream(dest) << "old";
  {
    ExclusiveFile f(dest);
    EXPECT_EQ(f.temporary(), temporary_name(dest, ::getpid()));
    EXPECT_TRUE(fs::exists(f.temporary()));
    f.write("new", 3);
    EXPECT_EQ(read_all(dest), "old") << "the destination changes only at commit";
    f.commit();
    EXPECT_FALSE(fs::exists(f.temporary()));
  }
  EXPECT_EQ(read_all(dest), "new");
  EXPECT_EQ(dir.entries(), 1);
  write_file_atomically(dest, "newer");
  EXPECT_EQ(read_all(dest), "newer");
  EXPECT_EQ(dir.entries(), 1);
}

TEST(ExclusiveFile, AnUncommittedTemporaryIsRemoved) {
  const Scratch dir("uncommitted");
  const std::string dest = dir.file("out.txt");
  {
    ExclusiveFile f(dest);
    f.write("partial", 7);
  }
  EXPECT_FALSE(fs::exists(dest));
  EXPECT_EQ(dir.entries(), 0);
}

// A symbolic link planted at the temporary's predictable name: the write fails with an
// IoError naming the temporary, and the link's target is never written.
TEST(ExclusiveFile, APlantedSymlinkAtTheTemporaryNameIsRefused) {
  const Scratch dir("symlink");
  const std::string target = dir.file("precious.txt"), dest = dir.file("out.toml");
  std::ofstream(target) << "precious";
  const std::string temporary = temporary_name(dest, ::getpid());
  fs::create_symlink(target, temporary);
  try {
    write_file_atomically(dest, "attacker-controlled write");
    FAIL() << "the write went through the planted link";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(temporary), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("exists already"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_all(target), "precious");
  EXPECT_TRUE(fs::is_symlink(temporary)) << "the planted link is not ours to remove";
  EXPECT_FALSE(fs::exists(dest));
  // A dangling link (its target does not exist yet) is refused too: nothing is created.
  const std::string absent = dir.file("absent.txt"), dest2 = dir.file("other.toml");
  fs::create_symlink(absent, temporary_name(dest2, ::getpid()));
  EXPECT_THROW(write_file_atomically(dest2, "x"), IoError);
  EXPECT_FALSE(fs::exists(absent));
  EXPECT_FALSE(fs::exists(dest2));
}

TEST(ExclusiveFile, APlantedFileAtTheTemporaryNameIsRefused) {
  const Scratch dir("file");
  const std::string dest = dir.file("out.txt");
  std::ofstream(temporary_name(dest, ::getpid())) << "someone else's";
  EXPECT_THROW(ExclusiveFile f(dest), IoError);
  EXPECT_EQ(read_all(temporary_name(dest, ::getpid())), "someone else's");
}

TEST(ExclusiveFile, UncreatableTemporaryNamesTheFileAndTheError) {
  const Scratch dir("nodir");
  const std::string dest = dir.file("missing/out.txt");
  try {
    ExclusiveFile f(dest);
    FAIL();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(temporary_name(dest, ::getpid())), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
  }
}

TEST(ExclusiveFile, TemporaryOwnerReadsThePid) {
  EXPECT_EQ(temporary_owner("ckpt-000000000004.hck.tmp-12345"), 12345);
  EXPECT_EQ(temporary_owner("/a/b/winners.json.tmp-7"), 7);
  EXPECT_EQ(temporary_owner("ckpt-000000000004.hck"), -1);
  EXPECT_EQ(temporary_owner("x.tmp-"), -1);
  EXPECT_EQ(temporary_owner("x.tmp-12a"), -1);
  EXPECT_EQ(temporary_owner("x.tmp-0"), -1);
  EXPECT_EQ(temporary_owner("x.tmp-1234567890"), -1);  // more digits than a pid has
}

TEST(ExclusiveFile, TemporaryOwnerAliveTellsLiveFromDeadWriters) {
  EXPECT_TRUE(temporary_owner_alive(temporary_name("f", ::getpid())));
  EXPECT_TRUE(temporary_owner_alive(temporary_name("f", ::getppid())));
  EXPECT_FALSE(temporary_owner_alive(temporary_name("f", dead_pid())));
  EXPECT_TRUE(temporary_owner_alive("f.tmp-x")) << "a name without a pid is not ours to judge";
}


TEST(OpenForAppending, AppendsToARegularFileAndRefusesALink) {
  Scratch dir("append");
  const std::string log = dir.file("run.jsonl"), target = dir.file("precious.txt"), link = dir.file("planted.jsonl");
  for (int i = 0; i < 2; ++i) {  // created, then appended to
    const int fd = open_for_appending(log, "the log");
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, "line\n", 5), 5);
    ::close(fd);
  }
  EXPECT_EQ(read_all(log), "line\nline\n");
  { std::ofstream(target) << "keep me"; }
  fs::create_symlink(target, link);
  try {
    open_for_appending(link, "train.metrics_path");
    FAIL() << "a symbolic link was opened";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("train.metrics_path '" + link + "': is a symbolic link"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read_all(target), "keep me");
}

}  // namespace
}  // namespace hetrec
