#include "server/store/instrumented_blob_store.h"

#include <utility>

namespace skinning {
namespace {

// Counts `status` in `errors` unless it is OK or NOT_FOUND.
void Count(const absl::Status& status, prometheus::Counter& errors) {
  if (!status.ok() && !absl::IsNotFound(status)) errors.Increment();
}

}  // namespace

InstrumentedBlobStore::InstrumentedBlobStore(std::shared_ptr<BlobStore> inner,
                                             prometheus::Family<prometheus::Counter>& errors)
    : inner_(std::move(inner)),
      put_errors_(errors.Add({{"operation", "put"}})),
      get_errors_(errors.Add({{"operation", "get"}})),
      exists_errors_(errors.Add({{"operation", "exists"}})),
      delete_errors_(errors.Add({{"operation", "delete"}})),
      list_errors_(errors.Add({{"operation", "list"}})),
      write_if_errors_(errors.Add({{"operation", "write_if"}})) {}

absl::Status InstrumentedBlobStore::Put(const std::string& key, const std::string& bytes) {
  absl::Status s = inner_->Put(key, bytes);
  Count(s, put_errors_);
  return s;
}

absl::StatusOr<std::string> InstrumentedBlobStore::Get(const std::string& key) {
  absl::StatusOr<std::string> r = inner_->Get(key);
  Count(r.status(), get_errors_);
  return r;
}

absl::StatusOr<bool> InstrumentedBlobStore::Exists(const std::string& key) {
  absl::StatusOr<bool> r = inner_->Exists(key);
  Count(r.status(), exists_errors_);
  return r;
}

absl::StatusOr<bool> InstrumentedBlobStore::Delete(const std::string& key) {
  absl::StatusOr<bool> r = inner_->Delete(key);
  Count(r.status(), delete_errors_);
  return r;
}

absl::StatusOr<std::vector<std::string>> InstrumentedBlobStore::List(const std::string& prefix) {
  absl::StatusOr<std::vector<std::string>> r = inner_->List(prefix);
  Count(r.status(), list_errors_);
  return r;
}

absl::StatusOr<bool> InstrumentedBlobStore::WriteIf(const std::string& guard, const std::optional<std::string>& expected,
                                                    const std::vector<Write>& writes) {
  absl::StatusOr<bool> r = inner_->WriteIf(guard, expected, writes);
  Count(r.status(), write_if_errors_);
  return r;
}

}  // namespace skinning
