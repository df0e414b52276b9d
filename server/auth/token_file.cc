#include "server/auth/token_file.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace skinning {

namespace {

// The file's content, or the reason it cannot be read (the only reader of the token file).
absl::StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read the token file '", path, "'"));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("error reading the token file '", path, "'"));
  return text.str();
}

}  // namespace

absl::StatusOr<std::unique_ptr<TokenFile>> TokenFile::Open(const std::string& path, std::chrono::milliseconds period) {
  ASSIGN_OR_RETURN(std::string text, ReadText(path));
  ASSIGN_OR_RETURN(std::unique_ptr<Authenticator> auth, Authenticator::FromText(text, path));
  std::unique_ptr<TokenFile> file(new TokenFile(path, std::move(text), std::move(auth)));
  if (period.count() > 0) file->watcher_ = std::thread([f = file.get(), period] { f->Watch(period); });
  return file;
}

TokenFile::TokenFile(std::string path, std::string text, std::shared_ptr<const Authenticator> auth)
    : path_(std::move(path)), current_(std::move(auth)), text_(std::move(text)) {}

TokenFile::~TokenFile() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

std::shared_ptr<const Authenticator> TokenFile::Current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

void TokenFile::Watch(std::chrono::milliseconds period) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!wake_.wait_for(lock, period, [this] { return stop_; })) {
    lock.unlock();
    CheckOnce();
    lock.lock();
  }
}

void TokenFile::CheckOnce() {
  absl::StatusOr<std::string> text = ReadText(path_);
  // Nothing changed, or the same refusal as last time: nothing to say again.
  const std::string seen = text.ok() ? *text : absl::StrCat("\x01", text.status().message());
  if ((text.ok() && *text == text_) || seen == refused_text_) return;
  absl::StatusOr<std::unique_ptr<Authenticator>> auth =
      text.ok() ? Authenticator::FromText(*text, path_) : absl::StatusOr<std::unique_ptr<Authenticator>>(text.status());
  if (!auth.ok()) {
    refused_text_ = seen;
    std::printf("skinning-server: --auth_tokens: %s %s (%s); the tokens of before stay\n", path_.c_str(),
                text.ok() ? "changed and is not valid" : "cannot be read", std::string(auth.status().message()).c_str());
    std::fflush(stdout);
    return;
  }
  const int tenants = (*auth)->tenant_count();
  text_ = *std::move(text);
  refused_text_.clear();
  {
    std::lock_guard<std::mutex> lock(mu_);
    current_ = *std::move(auth);
  }
  std::printf("skinning-server: --auth_tokens: read %s again: %d %s\n", path_.c_str(), tenants,
              tenants == 1 ? "tenant" : "tenants");
  std::fflush(stdout);
}

}  // namespace skinning
