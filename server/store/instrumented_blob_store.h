// A BlobStore decorator that counts failed operations for metrics.
#ifndef SKINNING_SERVER_STORE_INSTRUMENTED_BLOB_STORE_H_
#define SKINNING_SERVER_STORE_INSTRUMENTED_BLOB_STORE_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>

#include <memory>
#include <string>
#include <vector>

#include "server/store/blob_store.h"

namespace skinning {

// Forwards every call to `inner` and counts the results that are errors other than NOT_FOUND
// (an absent key is an answer, not a failure) in `errors`, labelled operation = put, get,
// exists, delete, list or write_if. All six series exist from the start (at 0). `errors` must outlive
// this object.
class InstrumentedBlobStore : public BlobStore {
 public:
  InstrumentedBlobStore(std::shared_ptr<BlobStore> inner,
                        prometheus::Family<prometheus::Counter>& errors);

  absl::Status Put(const std::string& key, const std::string& bytes) override;
  absl::StatusOr<std::string> Get(const std::string& key) override;
  absl::StatusOr<bool> Exists(const std::string& key) override;
  absl::StatusOr<bool> Delete(const std::string& key) override;
  absl::StatusOr<std::vector<std::string>> List(const std::string& prefix) override;
  absl::StatusOr<bool> WriteIf(const std::string& guard, const std::optional<std::string>& expected,
                               const std::vector<Write>& writes) override;

 private:
  const std::shared_ptr<BlobStore> inner_;
  prometheus::Counter& put_errors_;
  prometheus::Counter& get_errors_;
  prometheus::Counter& exists_errors_;
  prometheus::Counter& delete_errors_;
  prometheus::Counter& list_errors_;
  prometheus::Counter& write_if_errors_;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_STORE_INSTRUMENTED_BLOB_STORE_H_
