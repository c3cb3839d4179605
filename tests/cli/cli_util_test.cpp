// (Support code for the CLI tests; the file name makes it part of test_cli.)
#include "cli_util.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace ferrite::test {

CommandResult run_ferrite(const std::vector<std::string>& args, const std::string& stdin_text) {
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe(in_pipe) || pipe(out_pipe) || pipe(err_pipe)) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) {
    posix_spawn_file_actions_addclose(&fa, fd);
  }
  std::vector<std::string> argv_s = {FERRITE_BINARY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  const int rc = posix_spawn(&pid, FERRITE_BINARY, &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) throw std::runtime_error(std::string("cannot run ferrite: ") + std::strerror(rc));

  // Feed stdin and drain both outputs without deadlocking.
  size_t written = 0;
  if (stdin_text.empty()) close(in_pipe[1]);
  CommandResult r;
  std::array<pollfd, 3> fds{{{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0},
                              {stdin_text.empty() ? -1 : in_pipe[1], POLLOUT, 0}}};
  int open_outputs = 2;
  char buf[65536];
  while (open_outputs > 0) {
    if (poll(fds.data(), fds.size(), -1) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP))) {
        const ssize_t n = read(fds[i].fd, buf, sizeof(buf));
        if (n <= 0) {
          close(fds[i].fd);
          fds[i].fd = -1;
          --open_outputs;
        } else {
          (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
        }
      }
    }
    if (fds[2].fd >= 0 && (fds[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
      const ssize_t n = write(fds[2].fd, stdin_text.data() + written, stdin_text.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      if (n <= 0 || written == stdin_text.size()) {
        close(fds[2].fd);
        fds[2].fd = -1;
      }
    }
  }
  if (fds[2].fd >= 0) close(fds[2].fd);
  int status = 0;
  waitpid(pid, &status, 0);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace ferrite::test
