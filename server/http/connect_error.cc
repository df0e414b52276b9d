#include "server/http/connect_error.h"

#include <nlohmann/json.hpp>

#include "server/api/client_errors.h"

namespace skinning {

namespace {

struct CodeInfo {
  const char* name;
  unsigned http;
};

// Indexed by the canonical code number (absl, gRPC and Connect share it).
constexpr CodeInfo kCodes[] = {
    {"ok", 200},
    {"canceled", 499},
    {"unknown", 500},
    {"invalid_argument", 400},
    {"deadline_exceeded", 504},
    {"not_found", 404},
    {"already_exists", 409},
    {"permission_denied", 403},
    {"resource_exhausted", 429},
    {"failed_precondition", 400},
    {"aborted", 409},
    {"out_of_range", 400},
    {"unimplemented", 501},
    {"internal", 500},
    {"unavailable", 503},
    {"data_loss", 500},
    {"unauthenticated", 401},
};

const CodeInfo& Info(absl::StatusCode code) {
  const int c = static_cast<int>(code);
  return c >= 0 && c <= 16 ? kCodes[c] : kCodes[13];
}

}  // namespace

const char* ConnectCodeName(absl::StatusCode code) { return Info(code).name; }
unsigned ConnectHttpStatus(absl::StatusCode code) { return Info(code).http; }

std::string ConnectErrorJson(const absl::Status& status, absl::string_view door) {
  NoteClientError(door, status);
  nlohmann::json j{{"code", ConnectCodeName(status.code())}, {"message", std::string(status.message())}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace skinning
