#include "tests/proto/api_lint.h"

#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"

// The rules (each violation names its rule id):
//   unsigned         integers are signed unless the field's comment says it is a "bit pattern"
//                    (AIP-141)
//   timestamp        google.protobuf.Timestamp fields end in _time and _time fields are
//                    Timestamps (AIP-142)
//   duration         no number named *_seconds, *_ms, *_millis or *_unix*: use Duration or
//                    Timestamp; Duration fields do not end in _time (AIP-142)
//   count            quantities end in _count: no num_/number_of_ prefix, no _num suffix (AIP-141)
//   view             no include_* booleans: a view enum says how much to return (AIP-157)
//   page-size        page_size is int32; List requests have page_size and page_token, List
//                    responses next_page_token (AIP-158)
//   resource-name    a message that an RPC returns as a resource (Get, List, Create) has a string
//                    `name` whose comment gives its pattern, e.g. "rigs/{rig}" (AIP-122/123)
//   reference        other resources are referred to by name: no string field ends in _id, except
//                    the {resource}_id of a Create request (AIP-122/133)
//   standard-get     Get<R> of a resource R takes `name` and returns R (AIP-131)
//   standard-list    List<Rs> returns List<Rs>Response with a repeated resource field (AIP-132)
//   standard-create  Create<R> takes a field of type R and returns R or a message holding one
//                    (AIP-133)
//   standard-delete  Delete<R> takes `name` and returns google.protobuf.Empty (AIP-135)
//   request-unique   each RPC has its own request message, named <Rpc>Request
//   enum-zero        every enum's zero value is <ENUM>_UNSPECIFIED and its comment says what it
//                    means: the documented "default", or "never set" (AIP-126)
//   internal-import  a public file imports no internal package
//   descriptor       the descriptor set does not build
namespace skinning {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::DescriptorPool;
using google::protobuf::EnumDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::FileDescriptor;
using google::protobuf::MethodDescriptor;
using google::protobuf::ServiceDescriptor;
using google::protobuf::SourceLocation;

template <typename D>
std::string Comment(const D* d) {
  SourceLocation loc;
  if (!d->GetSourceLocation(&loc)) return "";
  return absl::StrCat(loc.leading_comments, " ", loc.trailing_comments);
}

bool IsMessage(const FieldDescriptor* f, const char* full_name) {
  return f->type() == FieldDescriptor::TYPE_MESSAGE && f->message_type()->full_name() == full_name;
}

// A resource pattern in a comment: "collection/{id}" somewhere in it.
bool HasPattern(const std::string& comment) { return absl::StrContains(comment, "/{"); }

class Linter {
 public:
  explicit Linter(std::vector<ApiViolation>* out) : out_(out) {}

  // The messages RPCs of `s` hand out as resources: Get<R> returning R, the repeated messages of a
  // List response, what a Create returns (itself or in a field named like it).
  void CollectResources(const ServiceDescriptor* s) {
    for (int i = 0; i < s->method_count(); ++i) {
      const MethodDescriptor* rpc = s->method(i);
      const std::string& n = rpc->name();
      const Descriptor* out = rpc->output_type();
      if (absl::StartsWith(n, "Get") && out->name() == n.substr(3)) resources_.insert(out);
      if (absl::StartsWith(n, "List"))
        for (int f = 0; f < out->field_count(); ++f)
          if (out->field(f)->is_repeated() && out->field(f)->type() == FieldDescriptor::TYPE_MESSAGE)
            resources_.insert(out->field(f)->message_type());
      if (absl::StartsWith(n, "Create")) {
        if (out->name() == n.substr(6)) resources_.insert(out);
        for (int f = 0; f < out->field_count(); ++f)
          if (out->field(f)->type() == FieldDescriptor::TYPE_MESSAGE && out->field(f)->message_type()->name() == n.substr(6))
            resources_.insert(out->field(f)->message_type());
      }
    }
  }

  // Every resource has a documented name.
  void CheckResources() {
    for (const Descriptor* m : resources_)
      if (!IsResource(m))
        Add("resource-name", m->full_name(), "a resource needs a string `name` whose comment gives its pattern");
  }

  void Add(const std::string& rule, const std::string& where, const std::string& message) {
    out_->push_back({rule, where, message});
  }

  void CheckFile(const FileDescriptor* file) {
    for (int i = 0; i < file->dependency_count(); ++i)
      if (absl::StrContains(file->dependency(i)->package(), "internal"))
        Add("internal-import", file->name(), absl::StrCat("imports ", file->dependency(i)->name()));
    for (int i = 0; i < file->message_type_count(); ++i) CheckMessage(file->message_type(i));
    for (int i = 0; i < file->enum_type_count(); ++i) CheckEnum(file->enum_type(i));
  }

  void CheckMessage(const Descriptor* m) {
    for (int i = 0; i < m->field_count(); ++i) CheckField(m, m->field(i));
    for (int i = 0; i < m->nested_type_count(); ++i) CheckMessage(m->nested_type(i));
    for (int i = 0; i < m->enum_type_count(); ++i) CheckEnum(m->enum_type(i));
    const std::string& name = m->name();
    if (absl::StartsWith(name, "List") && absl::EndsWith(name, "Request")) {
      const FieldDescriptor* size = m->FindFieldByName("page_size");
      if (size == nullptr || m->FindFieldByName("page_token") == nullptr)
        Add("page-size", m->full_name(), "a List request needs page_size and page_token");
    }
    if (absl::StartsWith(name, "List") && absl::EndsWith(name, "Response") &&
        m->FindFieldByName("next_page_token") == nullptr)
      Add("page-size", m->full_name(), "a List response needs next_page_token");
  }

  void CheckField(const Descriptor* m, const FieldDescriptor* f) {
    const std::string& n = f->name();
    const std::string where = f->full_name();
    switch (f->type()) {
      case FieldDescriptor::TYPE_UINT32:
      case FieldDescriptor::TYPE_UINT64:
      case FieldDescriptor::TYPE_FIXED32:
      case FieldDescriptor::TYPE_FIXED64:
        if (!absl::StrContains(absl::AsciiStrToLower(Comment(f)), "bit pattern"))
          Add("unsigned", where, absl::StrCat(f->type_name(), " field: integers are signed unless they are a bit pattern"));
        break;
      default:
        break;
    }
    const bool timestamp = IsMessage(f, "google.protobuf.Timestamp");
    const bool duration = IsMessage(f, "google.protobuf.Duration");
    if (timestamp != absl::EndsWith(n, "_time"))
      Add("timestamp", where,
          timestamp ? "a Timestamp field's name ends in _time" : "a field named *_time must be a google.protobuf.Timestamp");
    if (duration && absl::EndsWith(n, "_time")) Add("duration", where, "a Duration field must not end in _time");
    if (!duration && !timestamp && f->type() != FieldDescriptor::TYPE_MESSAGE &&
        (absl::EndsWith(n, "_seconds") || absl::EndsWith(n, "_ms") || absl::EndsWith(n, "_millis") ||
         absl::StrContains(n, "_unix")))
      Add("duration", where, "times and durations are google.protobuf.Timestamp / Duration, not numbers");
    if (absl::StartsWith(n, "num_") || absl::StartsWith(n, "number_of_") || absl::EndsWith(n, "_num"))
      Add("count", where, "a quantity's name ends in _count");
    if (f->type() == FieldDescriptor::TYPE_BOOL && absl::StartsWith(n, "include_"))
      Add("view", where, "an include_* boolean: use a view enum (AIP-157)");
    if (n == "page_size" && f->type() != FieldDescriptor::TYPE_INT32) Add("page-size", where, "page_size must be int32");
    if (f->type() == FieldDescriptor::TYPE_STRING && absl::EndsWith(n, "_id") &&
        !(absl::StartsWith(m->name(), "Create") && absl::EndsWith(m->name(), "Request")))
      Add("reference", where, "refer to resources by name, not *_id");
  }

  void CheckEnum(const EnumDescriptor* e) {
    if (e->value_count() == 0) return;
    const auto* zero = e->FindValueByNumber(0);
    // The prefix buf expects: FooBar -> FOO_BAR.
    std::string prefix;
    for (char c : e->name()) {
      if (absl::ascii_isupper(c) && !prefix.empty()) prefix += '_';
      prefix += absl::ascii_toupper(c);
    }
    if (zero == nullptr || zero->name() != prefix + "_UNSPECIFIED") {
      Add("enum-zero", e->full_name(), absl::StrCat("the zero value must be ", prefix, "_UNSPECIFIED"));
      return;
    }
    const std::string comment = absl::AsciiStrToLower(Comment(zero));
    if (!absl::StrContains(comment, "default") && !absl::StrContains(comment, "never set"))
      Add("enum-zero", zero->full_name(),
          "the zero value's comment must say what it means: the documented default, or that it is never set");
  }

  // Whether `m` has a string `name` documented with a resource pattern.
  static bool IsResource(const Descriptor* m) {
    const FieldDescriptor* name = m->FindFieldByName("name");
    return name != nullptr && name->type() == FieldDescriptor::TYPE_STRING && HasPattern(Comment(name));
  }

  void CheckService(const ServiceDescriptor* s, std::map<std::string, int>* request_uses) {
    for (int i = 0; i < s->method_count(); ++i) {
      const MethodDescriptor* rpc = s->method(i);
      const std::string& n = rpc->name();
      const Descriptor* in = rpc->input_type();
      const Descriptor* out = rpc->output_type();
      ++(*request_uses)[in->full_name()];
      if (in->name() != n + "Request")
        Add("request-unique", rpc->full_name(), absl::StrCat("the request must be ", n, "Request, not ", in->name()));
      const FieldDescriptor* name_field = in->FindFieldByName("name");
      const bool takes_name = name_field != nullptr && name_field->type() == FieldDescriptor::TYPE_STRING;
      if (absl::StartsWith(n, "Get")) {
        const Descriptor* target =
            s->file()->pool()->FindMessageTypeByName(absl::StrCat(s->file()->package(), ".", n.substr(3)));
        if (target != nullptr && (IsResource(target) || resources_.count(target))) {
          if (!takes_name) Add("standard-get", rpc->full_name(), "a standard Get takes the resource's `name`");
          if (out != target) Add("standard-get", rpc->full_name(), absl::StrCat("a standard Get returns ", target->name()));
        }
      }
      if (absl::StartsWith(n, "Delete")) {
        if (!takes_name) Add("standard-delete", rpc->full_name(), "a standard Delete takes the resource's `name`");
        if (out->full_name() != "google.protobuf.Empty")
          Add("standard-delete", rpc->full_name(), "a standard Delete returns google.protobuf.Empty");
      }
      if (absl::StartsWith(n, "List")) {
        if (out->name() != n + "Response") {
          Add("standard-list", rpc->full_name(), absl::StrCat("a standard List returns ", n, "Response"));
        } else {
          bool has_resources = false;
          for (int f = 0; f < out->field_count(); ++f)
            has_resources |= out->field(f)->is_repeated() && out->field(f)->type() == FieldDescriptor::TYPE_MESSAGE;
          if (!has_resources) Add("standard-list", rpc->full_name(), "a List response holds a repeated resource field");
        }
      }
      if (absl::StartsWith(n, "Create")) {
        const std::string resource = n.substr(6);
        bool takes_resource = false;
        for (int f = 0; f < in->field_count(); ++f)
          takes_resource |= in->field(f)->type() == FieldDescriptor::TYPE_MESSAGE &&
                            in->field(f)->message_type()->name() == resource;
        if (!takes_resource)
          Add("standard-create", rpc->full_name(), absl::StrCat("a standard Create takes the ", resource, " to create"));
        const Descriptor* created = nullptr;
        if (out->name() == resource) created = out;
        for (int f = 0; created == nullptr && f < out->field_count(); ++f)
          if (out->field(f)->type() == FieldDescriptor::TYPE_MESSAGE && out->field(f)->message_type()->name() == resource)
            created = out->field(f)->message_type();
        if (created == nullptr)
          Add("standard-create", rpc->full_name(), absl::StrCat("a standard Create returns the ", resource));
      }
    }
  }

 private:
  std::vector<ApiViolation>* out_;
  std::set<const Descriptor*> resources_;
};

}  // namespace

std::vector<ApiViolation> LintApi(const google::protobuf::FileDescriptorSet& set, const std::string& package) {
  std::vector<ApiViolation> violations;
  DescriptorPool pool;
  std::vector<const FileDescriptor*> files;
  for (const auto& proto : set.file()) {
    const FileDescriptor* file = pool.BuildFile(proto);
    if (file == nullptr) {
      violations.push_back({"descriptor", proto.name(), "does not build (were its imports included?)"});
      return violations;
    }
    if (file->package() == package) files.push_back(file);
  }
  if (files.empty()) violations.push_back({"descriptor", package, "no file of this package in the set"});
  Linter linter(&violations);
  std::map<std::string, int> request_uses;
  for (const FileDescriptor* file : files)
    for (int i = 0; i < file->service_count(); ++i) linter.CollectResources(file->service(i));
  linter.CheckResources();
  for (const FileDescriptor* file : files) {
    linter.CheckFile(file);
    for (int i = 0; i < file->service_count(); ++i) linter.CheckService(file->service(i), &request_uses);
  }
  for (const auto& [request, uses] : request_uses)
    if (uses > 1) linter.Add("request-unique", request, absl::StrCat("is the request of ", uses, " RPCs"));
  return violations;
}

}  // namespace skinning
