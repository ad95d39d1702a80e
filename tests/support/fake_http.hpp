// gpudoc::testing::FakeHttp — a small HTTP server on 127.0.0.1 (a free port) in a thread of the test,
// answering each request with what the test's handler returns, and keeping the requests it got. For
// the tests of gpudoc's HTTP clients (the fleet report's Prometheus client).
//
//   testing::FakeHttp server([](const testing::HttpRequest& q) {
//     return testing::HttpReply{.status = 200, .body = R"({"status":"success"})"};
//   });
//   server.url("/prometheus");   // "http://127.0.0.1:PORT/prometheus"
//   server.requests();           // what came: method, path, headers, body, the body's form decoded
//
// One connection at a time (the clients under test send one request, then read to the end). A reply
// with `.hang = true` says nothing and keeps the connection open until the client goes or the
// server stops. HTTP/1.0 answers: Content-Length, then the server closes.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace gpudoc::testing {

struct HttpRequest {
  std::string method{};
  std::string path{};
  std::map<std::string, std::string> headers{};  // names in lower case
  std::string body{};
  std::map<std::string, std::string> form{};  // the body as application/x-www-form-urlencoded, decoded
};

struct HttpReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body{};
  bool hang = false;  // say nothing: the client waits
};

// application/x-www-form-urlencoded: '+' is a space, %XX a byte.
inline std::string form_decode(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::strtol(s.substr(i + 1, 2).c_str(), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

inline std::map<std::string, std::string> form_fields(const std::string& body) {
  std::map<std::string, std::string> out;
  for (std::size_t from = 0; from <= body.size();) {
    std::size_t to = body.find('&', from);
    if (to == std::string::npos) to = body.size();
    const std::string field = body.substr(from, to - from);
    if (const auto eq = field.find('='); eq != std::string::npos)
      out[form_decode(field.substr(0, eq))] = form_decode(field.substr(eq + 1));
    from = to + 1;
  }
  return out;
}

class FakeHttp {
 public:
  using Handler = std::function<HttpReply(const HttpRequest&)>;

  explicit FakeHttp(Handler handler) : handler_(std::move(handler)) {
    listen_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (listen_ < 0 || ::bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_, 16) != 0 ||
        ::getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len) != 0 || ::pipe2(stop_, O_CLOEXEC) != 0)
      throw std::runtime_error(std::string("the fake HTTP server cannot listen: ") + std::strerror(errno));
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeHttp() { stop(); }
  FakeHttp(const FakeHttp&) = delete;
  FakeHttp& operator=(const FakeHttp&) = delete;

  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] std::string url(const std::string& prefix = "") const {
    return "http://127.0.0.1:" + std::to_string(port_) + prefix;
  }
  [[nodiscard]] std::vector<HttpRequest> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }
  // The server stops: a connection left hanging is closed.
  void stop() {
    if (!thread_.joinable()) return;
    const char c = 'x';
    (void)!::write(stop_[1], &c, 1);
    thread_.join();
    ::close(listen_);
    ::close(stop_[0]);
    ::close(stop_[1]);
  }

 private:
  // Waits for `fd` to read; false when the server stops first.
  bool wait_readable(int fd) const {
    pollfd p[2] = {{.fd = fd, .events = POLLIN, .revents = 0}, {.fd = stop_[0], .events = POLLIN, .revents = 0}};
    while (::poll(p, 2, -1) < 0)
      if (errno != EINTR) return false;
    return (p[1].revents & POLLIN) == 0;
  }

  void serve() {
    while (wait_readable(listen_)) {
      const int fd = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      answer(fd);
      ::close(fd);
    }
  }

  // Reads one request (head, then Content-Length bytes of body); false when the client went first.
  bool read_request(int fd, HttpRequest& q) const {
    std::string in;
    std::size_t head_end = std::string::npos, need = 0;
    char buf[4096];
    while (head_end == std::string::npos || in.size() < head_end + 4 + need) {
      if (!wait_readable(fd)) return false;
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return false;
      in.append(buf, static_cast<std::size_t>(n));
      if (head_end == std::string::npos && (head_end = in.find("\r\n\r\n")) != std::string::npos) {
        const std::string head = in.substr(0, head_end);
        std::size_t line_end = head.find("\r\n");
        const std::string first = head.substr(0, line_end);
        const auto sp1 = first.find(' '), sp2 = first.rfind(' ');
        q.method = first.substr(0, sp1);
        q.path = first.substr(sp1 + 1, sp2 - sp1 - 1);
        while (line_end != std::string::npos && line_end < head.size()) {
          const std::size_t from = line_end + 2;
          line_end = head.find("\r\n", from);
          const std::string line =
              head.substr(from, line_end == std::string::npos ? std::string::npos : line_end - from);
          const auto colon = line.find(':');
          if (colon == std::string::npos) continue;
          std::string name = line.substr(0, colon);
          for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
          q.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
        }
        if (const auto it = q.headers.find("content-length"); it != q.headers.end()) need = std::stoul(it->second);
      }
    }
    q.body = in.substr(head_end + 4, need);
    q.form = form_fields(q.body);
    return true;
  }

  void answer(int fd) {
    HttpRequest q;
    if (!read_request(fd, q)) return;
    {
      std::lock_guard lock(mu_);
      requests_.push_back(q);
    }
    const HttpReply r = handler_(q);
    if (r.hang) {
      // Until the client closes (a read of 0) or the server stops.
      char buf[256];
      while (wait_readable(fd) && ::recv(fd, buf, sizeof buf, 0) > 0) {
      }
      return;
    }
    const std::string out = "HTTP/1.0 " + std::to_string(r.status) + " Fake\r\nContent-Type: " + r.content_type +
                            "\r\nContent-Length: " + std::to_string(r.body.size()) + "\r\nConnection: close\r\n\r\n" +
                            r.body;
    for (std::size_t sent = 0; sent < out.size();) {
      const ssize_t n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;
      sent += static_cast<std::size_t>(n);
    }
  }

  Handler handler_;
  int listen_ = -1;
  int stop_[2] = {-1, -1};
  int port_ = 0;
  mutable std::mutex mu_;
  std::vector<HttpRequest> requests_{};
  std::thread thread_;
};

}  // namespace gpudoc::testing
