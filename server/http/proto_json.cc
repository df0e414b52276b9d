#include "server/http/proto_json.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/reflection.h>

#include <cerrno>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace skinning::proto_json {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumValueDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// Deeper texts and messages are left to protobuf.
constexpr int kMaxDepth = 32;

bool IsWellKnown(const google::protobuf::FileDescriptor* file) {
  return absl::StartsWith(file->name(), "google/protobuf/");
}

// Printable ASCII that no JSON escaper changes: protobuf's escapes '"', '\\' and control
// characters, and (for HTML) '<', '>'; '&' and '\'' are left out to be safe.
bool PlainChar(unsigned char c) {
  return c >= 0x20 && c <= 0x7e && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' &&
         c != '\'';
}

bool PlainText(absl::string_view s) {
  for (const char c : s)
    if (!PlainChar(static_cast<unsigned char>(c))) return false;
  return true;
}

// ---------------------------------------------------------------------------------------------
// Numbers as protobuf prints them. SimpleFtoa prints printf's "%.6g" (FLT_DIG) when that reads
// back as the same float and "%.9g" (FLT_DIG + 3) otherwise; SimpleDtoa "%.15g" or "%.17g"
// (DBL_DIG + 2). printf is slow, so the digits come from std::to_chars: when the shortest digits
// that read back are at most P (6 or 15), they are exactly "%.Pg"'s digits (the type's rounding
// interval is narrower than half a step of P digits, so the shortest string is the P-digit rounding
// of the value, trailing zeros removed), and "%.Pg" reads back; otherwise "%.Pg" does not read back
// (it would be a shorter string that does) and protobuf prints the second precision, which to_chars
// rounds exactly as printf does. Subnormal values, where that argument fails (and where protobuf's
// float check also looks at errno), take protobuf's own steps through printf.

// A decimal d.ddd × 10^exponent from to_chars' scientific output.
struct Decimal {
  bool negative = false;
  int exponent = 0;
  int count = 0;
  char digits[40];

  void TrimZeros() {
    while (count > 1 && digits[count - 1] == '0') --count;
  }
};

Decimal ParseScientific(const char* begin, const char* end) {
  Decimal d;
  const char* p = begin;
  if (*p == '-') {
    d.negative = true;
    ++p;
  }
  for (; p < end && *p != 'e'; ++p)
    if (*p != '.') d.digits[d.count++] = *p;
  ++p;  // 'e'
  if (*p == '+') ++p;
  std::from_chars(p, end, d.exponent);
  d.TrimZeros();
  return d;
}

// printf's "%.Pg" layout of d (already rounded to at most P digits, trailing zeros removed).
void AppendG(const Decimal& d, int precision, std::string* out) {
  if (d.negative) out->push_back('-');
  const int x = d.exponent;
  if (x < -4 || x >= precision) {
    out->push_back(d.digits[0]);
    if (d.count > 1) {
      out->push_back('.');
      out->append(d.digits + 1, d.count - 1);
    }
    out->push_back('e');
    out->push_back(x < 0 ? '-' : '+');
    const int ax = x < 0 ? -x : x;
    if (ax < 10) out->push_back('0');
    absl::StrAppend(out, ax);
  } else if (x >= 0) {
    for (int i = 0; i <= x; ++i) out->push_back(i < d.count ? d.digits[i] : '0');
    if (d.count > x + 1) {
      out->push_back('.');
      out->append(d.digits + x + 1, d.count - x - 1);
    }
  } else {
    out->append("0.");
    out->append(static_cast<size_t>(-x - 1), '0');
    out->append(d.digits, d.count);
  }
}

// Powers of ten a double holds exactly.
constexpr double kExactPowersOfTen[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                        1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                        1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

// "%.9g"'s digits of a float by one double operation instead of to_chars' exact arithmetic, for
// the common case. d holds the float's shortest digits, more than six of them, and gets the
// nine. Their exponent is "%.9g"'s: a float whose nine digits carry into the next power of ten
// lies within 5e-10 of it, so its shortest form is that power, one digit. |v| × 10^p with an
// exact power is one rounding, within 2^-24 of the exact product below 10^9, so its rounding to
// an integer is exact unless the product lies within 1e-6 of a half; then, for scales beyond
// 10^±22, and if the digits are not nine after all, this returns false and to_chars does it.
bool NineDigits(float v, Decimal* d) {
  const int p = 8 - d->exponent;
  if (p < -22 || p > 22) return false;
  const double a = std::fabs(static_cast<double>(v));
  const double y = p >= 0 ? a * kExactPowersOfTen[p] : a / kExactPowersOfTen[-p];
  const double whole = std::floor(y);
  const double fraction = y - whole;
  if (std::fabs(fraction - 0.5) < 1e-6) return false;
  int64_t q = static_cast<int64_t>(whole) + (fraction > 0.5 ? 1 : 0);
  if (q < 100000000 || q >= 1000000000) return false;
  d->count = 9;
  for (int i = 8; i >= 0; --i, q /= 10) d->digits[i] = static_cast<char>('0' + q % 10);
  d->TrimZeros();
  return true;
}

template <typename T>
void AppendShortOrLong(T v, int short_precision, int long_precision, std::string* out) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  Decimal d = ParseScientific(buf, r.ptr);
  if (d.count <= short_precision) return AppendG(d, short_precision, out);
  if constexpr (std::is_same_v<T, float>) {
    if (NineDigits(v, &d)) return AppendG(d, long_precision, out);
  }
  r = std::to_chars(buf, buf + sizeof buf, static_cast<double>(v), std::chars_format::scientific,
                    long_precision - 1);
  AppendG(ParseScientific(buf, r.ptr), long_precision, out);
}

// Quoted, as protobuf's FloatAsString/DoubleAsString.
void AppendNonFinite(double v, std::string* out) {
  out->append(std::isnan(v) ? "\"NaN\"" : v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
}

void AppendFloat(float v, std::string* out) {
  if (std::isnan(v) || std::isinf(v)) return AppendNonFinite(v, out);
  if (std::fpclassify(v) == FP_SUBNORMAL) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*g", FLT_DIG, static_cast<double>(v));
    errno = 0;
    char* end = nullptr;
    const float back = std::strtof(buf, &end);
    if (*end != 0 || errno != 0 || back != v)
      std::snprintf(buf, sizeof buf, "%.*g", FLT_DIG + 3, static_cast<double>(v));
    out->append(buf);
    return;
  }
  AppendShortOrLong(v, FLT_DIG, FLT_DIG + 3, out);
}

void AppendDouble(double v, std::string* out) {
  if (std::isnan(v) || std::isinf(v)) return AppendNonFinite(v, out);
  if (std::fpclassify(v) == FP_SUBNORMAL) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.*g", DBL_DIG, v);
    if (std::strtod(buf, nullptr) != v) std::snprintf(buf, sizeof buf, "%.*g", DBL_DIG + 2, v);
    out->append(buf);
    return;
  }
  AppendShortOrLong(v, DBL_DIG, DBL_DIG + 2, out);
}

// ---------------------------------------------------------------------------------------------
// Printing.

bool PrintMessage(const Message& m, int depth, std::string* out);

bool PrintValue(const Message& m, const Reflection& r, const FieldDescriptor* f, int i, int depth,
                std::string* out) {
  const bool rep = i >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      absl::StrAppend(out, rep ? r.GetRepeatedInt32(m, f, i) : r.GetInt32(m, f));
      return true;
    case FieldDescriptor::CPPTYPE_UINT32:
      absl::StrAppend(out, rep ? r.GetRepeatedUInt32(m, f, i) : r.GetUInt32(m, f));
      return true;
    case FieldDescriptor::CPPTYPE_INT64:
      absl::StrAppend(out, "\"", rep ? r.GetRepeatedInt64(m, f, i) : r.GetInt64(m, f), "\"");
      return true;
    case FieldDescriptor::CPPTYPE_UINT64:
      absl::StrAppend(out, "\"", rep ? r.GetRepeatedUInt64(m, f, i) : r.GetUInt64(m, f), "\"");
      return true;
    case FieldDescriptor::CPPTYPE_FLOAT:
      AppendFloat(rep ? r.GetRepeatedFloat(m, f, i) : r.GetFloat(m, f), out);
      return true;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      AppendDouble(rep ? r.GetRepeatedDouble(m, f, i) : r.GetDouble(m, f), out);
      return true;
    case FieldDescriptor::CPPTYPE_BOOL:
      out->append((rep ? r.GetRepeatedBool(m, f, i) : r.GetBool(m, f)) ? "true" : "false");
      return true;
    case FieldDescriptor::CPPTYPE_ENUM: {
      if (IsWellKnown(f->enum_type()->file())) return false;  // NullValue prints as null
      const int number = rep ? r.GetRepeatedEnumValue(m, f, i) : r.GetEnumValue(m, f);
      const EnumValueDescriptor* value = f->enum_type()->FindValueByNumber(number);
      if (value == nullptr || !PlainText(value->name())) return false;
      absl::StrAppend(out, "\"", value->name(), "\"");
      return true;
    }
    case FieldDescriptor::CPPTYPE_STRING: {
      if (f->type() == FieldDescriptor::TYPE_BYTES) return false;
      std::string scratch;
      const std::string& s = rep ? r.GetRepeatedStringReference(m, f, i, &scratch)
                                 : r.GetStringReference(m, f, &scratch);
      if (!PlainText(s)) return false;
      absl::StrAppend(out, "\"", s, "\"");
      return true;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return PrintMessage(rep ? r.GetRepeatedMessage(m, f, i) : r.GetMessage(m, f), depth + 1, out);
  }
  return false;
}

bool PrintMessage(const Message& m, int depth, std::string* out) {
  if (depth > kMaxDepth || IsWellKnown(m.GetDescriptor()->file())) return false;
  const Reflection& r = *m.GetReflection();
  if (!r.GetUnknownFields(m).empty()) return false;
  std::vector<const FieldDescriptor*> fields;
  r.ListFields(m, &fields);  // in field-number order, as the binary form protobuf prints from
  out->push_back('{');
  for (size_t k = 0; k < fields.size(); ++k) {
    const FieldDescriptor* f = fields[k];
    if (f->is_extension() || f->is_map() || !PlainText(f->json_name())) return false;
    if (!f->is_repeated() && !f->has_presence()) {
      // A -0 without presence: whether it is written at all is the binary form's business.
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT && r.GetFloat(m, f) == 0) return false;
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE && r.GetDouble(m, f) == 0) return false;
    }
    if (k > 0) out->push_back(',');
    absl::StrAppend(out, "\"", f->json_name(), "\":");
    if (f->is_repeated()) {
      out->push_back('[');
      const int n = r.FieldSize(m, f);
      for (int i = 0; i < n; ++i) {
        if (i > 0) out->push_back(',');
        if (!PrintValue(m, r, f, i, depth, out)) return false;
      }
      out->push_back(']');
    } else if (!PrintValue(m, r, f, -1, depth, out)) {
      return false;
    }
  }
  out->push_back('}');
  return true;
}

// ---------------------------------------------------------------------------------------------
// Parsing.

class Parser {
 public:
  explicit Parser(absl::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  bool Document(Message* m) {
    Space();
    if (!Object(m, 0)) return false;
    Space();
    return p_ == end_;
  }

 private:
  void Space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  bool Eat(char c) {
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }
  bool Digit() const { return p_ < end_ && *p_ >= '0' && *p_ <= '9'; }

  // A string of plain characters without escapes; *s is its content.
  bool PlainString(absl::string_view* s) {
    if (!Eat('"')) return false;
    const char* begin = p_;
    while (p_ < end_ && *p_ != '"') {
      if (!PlainChar(static_cast<unsigned char>(*p_))) return false;
      ++p_;
    }
    if (p_ == end_) return false;
    *s = absl::string_view(begin, p_ - begin);
    ++p_;
    return true;
  }

  // A JSON number (RFC 8259); *integral when it has no fraction and no exponent.
  bool NumberToken(absl::string_view* token, bool* integral) {
    const char* begin = p_;
    *integral = true;
    Eat('-');
    if (!Eat('0')) {
      if (!Digit()) return false;
      while (Digit()) ++p_;
    }
    if (Eat('.')) {
      *integral = false;
      if (!Digit()) return false;
      while (Digit()) ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      *integral = false;
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!Digit()) return false;
      while (Digit()) ++p_;
    }
    *token = absl::string_view(begin, p_ - begin);
    // "-0" reads as the integer 0 in protobuf, not as -0.0: left to it.
    return *token != "-0";
  }

  // An integer, bare or in quotes (protobuf takes both for integer fields); quoted, only the
  // same plain form.
  template <typename T>
  bool Integer(T* value) {
    absl::string_view token;
    bool integral = false;
    if (Eat('"')) {
      if (!NumberToken(&token, &integral) || !Eat('"')) return false;
    } else if (!NumberToken(&token, &integral)) {
      return false;
    }
    if (!integral) return false;
    const auto r = std::from_chars(token.data(), token.data() + token.size(), *value);
    return r.ec == std::errc() && r.ptr == token.data() + token.size();
  }

  // A float or double from a bare JSON number, as protobuf converts it: an integer only where the
  // type holds it exactly (protobuf refuses a conversion that changes it), anything else through
  // double.
  template <typename T>
  bool Real(T* value) {
    absl::string_view token;
    bool integral = false;
    if (!NumberToken(&token, &integral)) return false;
    const char* end = token.data() + token.size();
    if (integral) {
      int64_t i = 0;
      const auto r = std::from_chars(token.data(), end, i);
      constexpr int64_t kBound = int64_t{1} << 62;  // converting back stays defined
      if (r.ec != std::errc() || r.ptr != end || i > kBound || i < -kBound) return false;
      *value = static_cast<T>(i);
      return static_cast<int64_t>(*value) == i;
    }
    double d = 0;
    const auto r = std::from_chars(token.data(), end, d);
    if (r.ec != std::errc() || r.ptr != end || !(std::fabs(d) <= std::numeric_limits<T>::max()))
      return false;
    *value = static_cast<T>(d);
    // Underflow to zero or to a subnormal: left to protobuf's rules.
    return d == 0 || std::fabs(*value) >= std::numeric_limits<T>::min();
  }

  bool Literal(absl::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() || absl::string_view(p_, word.size()) != word)
      return false;
    p_ += word.size();
    return true;
  }

  static const FieldDescriptor* FindField(const Descriptor* d, absl::string_view key) {
    // As protobuf looks them up: the JSON name first, then the proto name.
    for (int i = 0; i < d->field_count(); ++i)
      if (d->field(i)->json_name() == key) return d->field(i);
    for (int i = 0; i < d->field_count(); ++i)
      if (d->field(i)->name() == key) return d->field(i);
    return nullptr;
  }

  // `open`, items separated by commas, `close`; item() reads one.
  template <typename Item>
  bool Sequence(char open, char close, Item item) {
    if (!Eat(open)) return false;
    Space();
    if (Eat(close)) return true;
    for (;;) {
      if (!item()) return false;
      Space();
      if (Eat(close)) return true;
      if (!Eat(',')) return false;
      Space();
    }
  }

  // A member's key and its colon.
  bool Key(absl::string_view* key) {
    if (!PlainString(key)) return false;
    Space();
    if (!Eat(':')) return false;
    Space();
    return true;
  }

  bool Object(Message* m, int depth) {
    const Descriptor* d = m->GetDescriptor();
    if (depth > kMaxDepth || IsWellKnown(d->file())) return false;
    const Reflection* r = m->GetReflection();
    absl::InlinedVector<int, 8> seen;
    return Sequence('{', '}', [&] {
      absl::string_view key;
      if (!Key(&key)) return false;
      const FieldDescriptor* f = FindField(d, key);
      if (f == nullptr) return false;
      for (const int number : seen)
        if (number == f->number()) return false;
      seen.push_back(f->number());
      if (const auto* oneof = f->real_containing_oneof();
          oneof != nullptr && r->HasOneof(*m, oneof))
        return false;
      return Field(m, f, depth);
    });
  }

  bool Field(Message* m, const FieldDescriptor* f, int depth) {
    if (f->is_map()) return Map(m, f, depth);
    if (!f->is_repeated()) return Value(m, f, false, depth);
    return Sequence('[', ']', [&] { return Value(m, f, true, depth); });
  }

  // A map with string keys, each once (a few dozen at most; more are left to protobuf).
  bool Map(Message* m, const FieldDescriptor* f, int depth) {
    const FieldDescriptor* key_field = f->message_type()->map_key();
    const FieldDescriptor* value_field = f->message_type()->map_value();
    if (key_field->type() != FieldDescriptor::TYPE_STRING) return false;
    absl::InlinedVector<absl::string_view, 8> keys;
    return Sequence('{', '}', [&] {
      absl::string_view key;
      if (keys.size() >= 64 || !Key(&key)) return false;
      for (const absl::string_view k : keys)
        if (k == key) return false;
      keys.push_back(key);
      Message* entry = m->GetReflection()->AddMessage(m, f);
      entry->GetReflection()->SetString(entry, key_field, std::string(key));
      return Value(entry, value_field, false, depth + 1);
    });
  }

  bool Value(Message* m, const FieldDescriptor* f, bool rep, int depth) {
    const Reflection* r = m->GetReflection();
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_MESSAGE:
        if (p_ == end_ || *p_ != '{') return false;
        return Object(rep ? r->AddMessage(m, f) : r->MutableMessage(m, f), depth + 1);
      case FieldDescriptor::CPPTYPE_ENUM: {
        absl::string_view name;
        if (IsWellKnown(f->enum_type()->file()) || !PlainString(&name)) return false;
        const EnumValueDescriptor* value = f->enum_type()->FindValueByName(std::string(name));
        if (value == nullptr) return false;
        rep ? r->AddEnumValue(m, f, value->number()) : r->SetEnumValue(m, f, value->number());
        return true;
      }
      case FieldDescriptor::CPPTYPE_STRING: {
        absl::string_view s;
        if (f->type() == FieldDescriptor::TYPE_BYTES || !PlainString(&s)) return false;
        rep ? r->AddString(m, f, std::string(s)) : r->SetString(m, f, std::string(s));
        return true;
      }
      case FieldDescriptor::CPPTYPE_BOOL: {
        bool b = false;
        if (Literal("true")) {
          b = true;
        } else if (!Literal("false")) {
          return false;
        }
        rep ? r->AddBool(m, f, b) : r->SetBool(m, f, b);
        return true;
      }
      case FieldDescriptor::CPPTYPE_FLOAT: {
        float v = 0;
        if (!Real(&v)) return false;
        rep ? r->AddFloat(m, f, v) : r->SetFloat(m, f, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_DOUBLE: {
        double v = 0;
        if (!Real(&v)) return false;
        rep ? r->AddDouble(m, f, v) : r->SetDouble(m, f, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_INT32: {
        int32_t v = 0;
        if (!Integer(&v)) return false;
        rep ? r->AddInt32(m, f, v) : r->SetInt32(m, f, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_UINT32: {
        uint32_t v = 0;
        if (!Integer(&v)) return false;  // from_chars takes no sign for unsigned types
        rep ? r->AddUInt32(m, f, v) : r->SetUInt32(m, f, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_INT64: {
        int64_t v = 0;
        if (!Integer(&v)) return false;
        rep ? r->AddInt64(m, f, v) : r->SetInt64(m, f, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_UINT64: {
        uint64_t v = 0;
        if (!Integer(&v)) return false;  // from_chars takes no sign for unsigned types
        rep ? r->AddUInt64(m, f, v) : r->SetUInt64(m, f, v);
        return true;
      }
    }
    return false;
  }

  const char* p_;
  const char* const end_;
};

}  // namespace

bool Print(const Message& m, std::string* out) { return PrintMessage(m, 0, out); }

bool Parse(absl::string_view json, Message* m) {
  m->Clear();
  if (Parser(json).Document(m)) return true;
  m->Clear();
  return false;
}

}  // namespace skinning::proto_json
