// rectrain/base/named_enum.h: an enum's values with their names, so a mode is parsed once at
// the edge (a config key, a flag, a manifest field) and is a type everywhere after it.
//
// Example:
//   enum class Pooling : uint8_t { kSum, kMean };
//   inline constexpr NamedEnum<Pooling>::Entry kPoolingEntries[] = {{Pooling::kSum, "sum"},
//                                                                  {Pooling::kMean, "mean"}};
//   inline constexpr NamedEnum<Pooling> kPoolings(kPoolingEntries);
//   RECTRAIN_ASSIGN_OR_RETURN(Pooling p, kPoolings.Parse(text, "model.field_pooling.C1"));
//   // error: model.field_pooling.C1: "max" is not one of sum, mean
//   std::string name = kPoolings.Name(p);  // "sum"
//
// Thread safety: immutable; the entries must outlive the NamedEnum (declare both constexpr at
// namespace scope).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rectrain/base/result.h"

namespace rectrain {

template <typename E>
class NamedEnum {
 public:
  struct Entry {
    E value;
    const char* name;
  };

  template <size_t N>
  constexpr explicit NamedEnum(const Entry (&entries)[N]) : entries_(entries, N) {}
  // A part of another table (the names a config accepts, say, of all a manifest may hold).
  constexpr explicit NamedEnum(std::span<const Entry> entries) : entries_(entries) {}

  // The name of `value`; "?" for a value the table does not list (a programming error).
  const char* Name(E value) const {
    for (const Entry& e : entries_) {
      if (e.value == value) return e.name;
    }
    return "?";
  }

  // The value named `name` exactly, or nullopt.
  std::optional<E> Find(std::string_view name) const {
    for (const Entry& e : entries_) {
      if (name == e.name) return e.value;
    }
    return std::nullopt;
  }

  // The value named `name`, or InvalidArgument "<what>: "<name>" is not one of a, b, c".
  Result<E> Parse(std::string_view name, std::string_view what) const {
    if (std::optional<E> v = Find(name)) return *v;
    return InvalidArgumentError(std::string(what) + ": \"" + std::string(name) + "\" is not one of " + List());
  }

  // Every name, in table order.
  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const Entry& e : entries_) names.emplace_back(e.name);
    return names;
  }

  // "a, b, c".
  std::string List() const {
    std::string list;
    for (const Entry& e : entries_) list += (list.empty() ? "" : ", ") + std::string(e.name);
    return list;
  }

 private:
  std::span<const Entry> entries_;
};

}  // namespace rectrain
