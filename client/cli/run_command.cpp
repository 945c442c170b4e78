// run_command.cpp: posix_spawn with a stdin pipe and a stderr pipe.
#include "run_command.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace jobqueue::cli {

namespace {

struct Pipe {
    int fd[2] = {-1, -1};
    Pipe() {
        // close-on-exec: commands spawned by other threads must not inherit it
        if (pipe2(fd, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    }
    ~Pipe() {
        close_end(0);
        close_end(1);
    }
    void close_end(int i) {
        if (fd[i] >= 0) ::close(fd[i]);
        fd[i] = -1;
    }
};

}  // namespace

CommandResult run_command(const std::string& command, const std::string& input,
                          const std::vector<std::string>& extra_env, size_t stderr_limit) {
    Pipe in, err;

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in.fd[0], 0);
    posix_spawn_file_actions_adddup2(&actions, err.fd[1], 2);

    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setsigmask(&attributes, &none);  // the worker blocks these; the command must not
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setpgroup(&attributes, 0);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);

    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
    for (const auto& e : extra_env) env_strings.push_back(e);
    std::vector<char*> envp;
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);

    std::string shell_command = command;
    char sh[] = "/bin/sh";
    char dash_c[] = "-c";
    char* argv[] = {sh, dash_c, shell_command.data(), nullptr};

    pid_t pid;
    int rc = posix_spawn(&pid, "/bin/sh", &actions, &attributes, argv, envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (rc != 0) throw std::runtime_error(std::string("cannot start /bin/sh: ") + std::strerror(rc));
    in.close_end(0);
    err.close_end(1);

    // Feed stdin and drain stderr together: either may fill its pipe.
    fcntl(in.fd[1], F_SETFL, O_NONBLOCK);
    CommandResult result;
    size_t written = 0;
    if (input.empty()) in.close_end(1);
    char buffer[4096];
    while (err.fd[0] >= 0) {
        pollfd fds[2] = {{err.fd[0], POLLIN, 0}, {in.fd[1], POLLOUT, 0}};
        int count = in.fd[1] >= 0 ? 2 : 1;
        if (::poll(fds, count, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (count == 2 && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t n = ::write(in.fd[1], input.data() + written, input.size() - written);
            if (n > 0) written += static_cast<size_t>(n);
            if (n < 0 && errno != EAGAIN && errno != EINTR) in.close_end(1);  // EPIPE: it stopped reading
            if (written == input.size()) in.close_end(1);
        }
        if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = ::read(err.fd[0], buffer, sizeof buffer);
            if (n > 0) {
                size_t room = stderr_limit - std::min(stderr_limit, result.error_output.size());
                result.error_output.append(buffer, std::min(room, static_cast<size_t>(n)));
            } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
                err.close_end(0);
            }
        }
    }
    in.close_end(1);

    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) {
        result.exited = true;
        result.exit_status = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        result.signal = WTERMSIG(status);
    }
    return result;
}

}  // namespace jobqueue::cli
