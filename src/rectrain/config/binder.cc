#include "rectrain/config/binder.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace rectrain::config {
namespace {

// Our own document tree: yaml-cpp's Node has reference semantics on assignment that make
// in-place edits error-prone, and we need per-node source locations for messages.
struct Node {
  enum class Kind { kNull, kScalar, kList, kMap };
  Kind kind = Kind::kNull;
  std::string scalar;
  bool quoted = false;  // a quoted scalar is always a string (never null)
  std::vector<Node> list;
  std::vector<std::pair<std::string, Node>> map;
  std::string where;  // "config.yaml:3:5" or "--set a.b=c"

  // Defined below, where Node is complete: std::pair<std::string, Node> needs it to be (clang
  // with libstdc++ instantiates the members of `map` here otherwise).
  Node();
  Node(const Node&);
  Node(Node&&) noexcept;
  Node& operator=(const Node&);
  Node& operator=(Node&&) noexcept;
  ~Node();

  Node* Find(std::string_view key) {
    for (auto& [k, v] : map) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  const Node* Find(std::string_view key) const {
    for (const auto& [k, v] : map) {
      if (k == key) return &v;
    }
    return nullptr;
  }
};
Node::Node() = default;
Node::Node(const Node&) = default;
Node::Node(Node&&) noexcept = default;
Node& Node::operator=(const Node&) = default;
Node& Node::operator=(Node&&) noexcept = default;
Node::~Node() = default;

std::vector<std::string> SplitPath(std::string_view path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    parts.emplace_back(path.substr(start, dot == std::string_view::npos ? path.npos : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts;
}

std::string Where(const std::string& source, const YAML::Mark& mark) {
  if (mark.is_null()) return source;
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// The first kMaxReportedErrors lines joined by `separator`, then how many more there are.
std::string JoinErrors(const std::vector<std::string>& errors, const char* separator) {
  std::string msg;
  const size_t shown = std::min<size_t>(errors.size(), kMaxReportedErrors);
  for (size_t i = 0; i < shown; ++i) msg += (i > 0 ? separator : "") + errors[i];
  if (errors.size() > shown) msg += separator + std::string("... and ") + std::to_string(errors.size() - shown) + " more";
  return msg;
}

// Builds our tree from yaml-cpp's parse events for one document, within the limits of
// binder.h. yaml-cpp's Node shares an aliased node; our tree copies it, so the copy is where an
// alias bomb would blow up: every anchored value keeps its size and height, and an alias that
// would pass a limit is refused before anything is copied. Once a limit is passed the builder
// ignores the rest of the events (the parser still reads the rest of the bounded text). Errors
// are collected, never thrown through the parser.
class TreeBuilder : public YAML::EventHandler {
 public:
  explicit TreeBuilder(const std::string& source) : source_(source) {}

  // The document after the parser returned: the limit passed, or every duplicate key, or it.
  Result<Node> Take() {
    if (!limit_error_.empty()) return InvalidArgumentError(limit_error_);
    if (!errors_.empty()) return InvalidArgumentError(JoinErrors(errors_, "\n  "));
    return std::move(root_);
  }
  const YAML::Mark& document_mark() const { return document_mark_; }

  void OnDocumentStart(const YAML::Mark& mark) override { document_mark_ = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { Leaf(mark, anchor, Node{}); }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    Node node;
    node.kind = Node::Kind::kScalar;
    node.scalar = value;
    node.quoted = tag == "!";  // yaml-cpp tags every quoted scalar "!": always a string
    Leaf(mark, anchor, std::move(node));
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = anchors_.find(anchor);
    if (!limit_error_.empty() || it == anchors_.end()) return;
    if (!Charge(mark, it->second.values, it->second.height)) return;
    Place(mark, Node(it->second.node), it->second.values, it->second.height);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, anchor, Node::Kind::kList);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, anchor, Node::Kind::kMap);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Anchored {
    Node node;
    int64_t values = 0;
    int height = 0;
  };
  struct Frame {
    Node node;
    YAML::Mark mark;
    YAML::anchor_t anchor = 0;
    int64_t values = 1;  // this container and everything in it
    int height = 1;
    std::string path;      // dotted path of this container (duplicate-key errors)
    bool has_key = false;  // a map's key has been read; its value comes next
    std::string key;
    YAML::Mark key_mark;
    std::unordered_set<std::string> keys;  // Node::Find is linear: a wide map would be quadratic
  };

  // Counts `values` more values `height` deep below the open containers; false (and the error
  // recorded) when that passes a limit.
  bool Charge(const YAML::Mark& mark, int64_t values, int height) {
    if (static_cast<int64_t>(stack_.size()) + height > kMaxConfigDepth) {
      limit_error_ = Where(source_, mark) + ": maps and lists nest more than " + std::to_string(kMaxConfigDepth) +
                     " deep (YAML aliases expanded; the limit of a config, docs/config.md \"Limits\")";
      return false;
    }
    values_ += values;
    if (values_ > kMaxConfigValues) {
      limit_error_ = Where(source_, mark) + ": the document holds more than " + std::to_string(kMaxConfigValues) +
                     " values once its YAML aliases (*name) are expanded (the limit of a config; docs/config.md "
                     "\"Limits\")";
      return false;
    }
    return true;
  }

  void Remember(const YAML::Mark& mark, YAML::anchor_t anchor, const Node& node, int64_t values, int height) {
    if (anchor == 0) return;
    anchored_values_ += values;  // the copies kept for aliases are bounded like the tree
    if (anchored_values_ > kMaxConfigValues) {
      limit_error_ = Where(source_, mark) + ": the YAML anchors (&name) of the document hold more than " +
                     std::to_string(kMaxConfigValues) + " values (the limit of a config; docs/config.md \"Limits\")";
      return;
    }
    anchors_[anchor] = Anchored{node, values, height};
  }

  void Leaf(const YAML::Mark& mark, YAML::anchor_t anchor, Node node) {
    if (!limit_error_.empty() || !Charge(mark, 1, 1)) return;
    node.where = Where(source_, mark);
    Remember(mark, anchor, node, 1, 1);
    Place(mark, std::move(node), 1, 1);
  }

  void Open(const YAML::Mark& mark, YAML::anchor_t anchor, Node::Kind kind) {
    if (!limit_error_.empty() || !Charge(mark, 1, 1)) return;
    Frame frame;
    frame.node.kind = kind;
    frame.node.where = Where(source_, mark);
    frame.mark = mark;
    frame.anchor = anchor;
    if (!stack_.empty()) {
      const Frame& parent = stack_.back();
      frame.path = parent.node.kind == Node::Kind::kMap && parent.has_key
                       ? (parent.path.empty() ? parent.key : parent.path + "." + parent.key)
                       : parent.path;
    }
    stack_.push_back(std::move(frame));
  }

  void Close() {
    if (!limit_error_.empty()) return;
    Frame frame = std::move(stack_.back());
    stack_.pop_back();
    Remember(frame.mark, frame.anchor, frame.node, frame.values, frame.height);
    Place(frame.mark, std::move(frame.node), frame.values, frame.height);
  }

  // Puts a finished value into the open container (a list item, a map key or its value), or
  // makes it the document.
  void Place(const YAML::Mark& mark, Node node, int64_t values, int height) {
    if (stack_.empty()) {
      root_ = std::move(node);
      return;
    }
    Frame& top = stack_.back();
    top.values += values;
    top.height = std::max(top.height, height + 1);
    if (top.node.kind == Node::Kind::kList) {
      top.node.list.push_back(std::move(node));
    } else if (!top.has_key) {
      top.has_key = true;
      top.key = node.kind == Node::Kind::kScalar ? node.scalar : std::string("<complex key>");
      top.key_mark = mark;
    } else {
      top.has_key = false;
      if (!top.keys.insert(top.key).second) {
        const std::string full = top.path.empty() ? top.key : top.path + "." + top.key;
        errors_.push_back(full + ": duplicate key (" + Where(source_, top.key_mark) + ")");
        return;
      }
      // A map key's own mark points at the key, which reads better for unknown-key errors.
      node.where = Where(source_, top.key_mark);
      top.node.map.emplace_back(std::move(top.key), std::move(node));
    }
  }

  const std::string& source_;
  YAML::Mark document_mark_ = YAML::Mark::null_mark();
  std::vector<Frame> stack_;
  std::unordered_map<YAML::anchor_t, Anchored> anchors_;
  Node root_;
  int64_t values_ = 0;
  int64_t anchored_values_ = 0;
  std::string limit_error_;
  std::vector<std::string> errors_;  // duplicate keys
};

// Notes where a document starts, ignoring its content (the probe for a second document).
class DocumentProbe : public YAML::EventHandler {
 public:
  YAML::Mark mark = YAML::Mark::null_mark();
  void OnDocumentStart(const YAML::Mark& m) override { mark = m; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// Why ParseYaml refused a text: --set takes the text literally after a syntax error, and only
// then.
enum class ParseFailure { kNone, kSyntax, kOther };

// Parses one YAML document within the limits of binder.h.
Result<Node> ParseYaml(std::string_view text, const std::string& source, ParseFailure* failure = nullptr) {
  auto fail = [&](ParseFailure why, std::string message) {
    if (failure != nullptr) *failure = why;
    return InvalidArgumentError(std::move(message));
  };
  if (static_cast<int64_t>(text.size()) > kMaxConfigBytes) {
    return fail(ParseFailure::kOther, source + ": " + std::to_string(text.size()) +
                                          " bytes is more than a config may hold (" + std::to_string(kMaxConfigBytes) +
                                          " bytes; docs/config.md \"Limits\")");
  }
  std::istringstream in{std::string(text)};
  TreeBuilder builder(source);
  DocumentProbe second;
  bool has_second = false;
  try {
    YAML::Parser parser(in);
    parser.HandleNextDocument(builder);
    has_second = parser.HandleNextDocument(second);
  } catch (const YAML::Exception& e) {
    return fail(ParseFailure::kSyntax, Where(source, e.mark) + ": YAML syntax error: " + e.msg);
  }
  if (has_second) {
    // yaml-cpp 0.7 reads a stray ',' as endless empty documents at the same place.
    if (second.mark.pos == builder.document_mark().pos) {
      return fail(ParseFailure::kSyntax, Where(source, second.mark) + ": YAML syntax error: unexpected text");
    }
    return fail(ParseFailure::kOther, Where(source, second.mark) +
                                          ": a second YAML document (after a '---' line): a config is one "
                                          "document; remove the '---' or split the file");
  }
  Result<Node> tree = builder.Take();
  if (!tree.ok()) return fail(ParseFailure::kOther, tree.status().message());
  return tree;
}

void SetWhere(Node* node, const std::string& where) {
  node->where = where;
  for (auto& item : node->list) SetWhere(&item, where);
  for (auto& [k, v] : node->map) SetWhere(&v, where);
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string FormatNumber(double v) {
  if (std::isinf(v)) return v > 0 ? "+inf" : "-inf";
  if (std::isnan(v)) return "nan";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    return std::to_string(static_cast<int64_t>(v));
  }
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, res.ptr);
}

std::string FormatFloat(float v) {
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  if (std::isnan(v)) return ".nan";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, res.ptr);
}

std::string FormatDouble(double v) {
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  if (std::isnan(v)) return ".nan";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, res.ptr);
}

std::optional<double> ParseDouble(std::string_view s) {
  std::string t(s);
  std::string lower = ToLower(t);
  if (lower == ".inf" || lower == "+.inf" || lower == "inf") return std::numeric_limits<double>::infinity();
  if (lower == "-.inf" || lower == "-inf") return -std::numeric_limits<double>::infinity();
  if (!t.empty() && t[0] == '+') t.erase(0, 1);
  double v = 0;
  auto res = std::from_chars(t.data(), t.data() + t.size(), v);
  if (res.ec != std::errc() || res.ptr != t.data() + t.size() || t.empty()) return std::nullopt;
  return v;
}

std::optional<int64_t> ParseInt(std::string_view s) {
  std::string t(s);
  if (!t.empty() && t[0] == '+') t.erase(0, 1);
  int64_t v = 0;
  auto res = std::from_chars(t.data(), t.data() + t.size(), v);
  if (res.ec == std::errc() && res.ptr == t.data() + t.size() && !t.empty()) return v;
  // Accept exact integers written as floats ("1e6", "100.0").
  auto d = ParseDouble(s);
  if (d && std::isfinite(*d) && *d == std::floor(*d) && std::fabs(*d) < 9.2e18) {
    return static_cast<int64_t>(*d);
  }
  return std::nullopt;
}

std::optional<bool> ParseBool(std::string_view s) {
  std::string lower = ToLower(s);
  if (lower == "true" || lower == "yes" || lower == "on") return true;
  if (lower == "false" || lower == "no" || lower == "off") return false;
  return std::nullopt;
}

std::string Describe(const Node& node) {
  switch (node.kind) {
    case Node::Kind::kNull: return "null";
    case Node::Kind::kScalar: return "\"" + node.scalar + "\"";
    case Node::Kind::kList: return "a list";
    case Node::Kind::kMap: return "a map";
  }
  return "?";
}

Node Scalar(std::string text, bool is_string = false) {
  Node n;
  n.kind = Node::Kind::kScalar;
  n.scalar = std::move(text);
  n.quoted = is_string;
  return n;
}

bool LooksNonString(const std::string& s) {
  if (s.empty()) return true;
  if (ParseDouble(s) || ParseBool(s)) return true;
  std::string lower = ToLower(s);
  return lower == "null" || lower == "~";
}

void Emit(YAML::Emitter& out, const Node& node) {
  switch (node.kind) {
    case Node::Kind::kNull:
      out << YAML::Null;
      return;
    case Node::Kind::kScalar:
      if (node.quoted && LooksNonString(node.scalar)) {
        out << YAML::DoubleQuoted << node.scalar;
      } else {
        out << node.scalar;
      }
      return;
    case Node::Kind::kList: {
      bool flat = std::all_of(node.list.begin(), node.list.end(),
                              [](const Node& n) { return n.kind == Node::Kind::kScalar; });
      if (flat) out << YAML::Flow;
      out << YAML::BeginSeq;
      for (const auto& item : node.list) Emit(out, item);
      out << YAML::EndSeq;
      return;
    }
    case Node::Kind::kMap:
      if (node.map.empty()) {
        out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
        return;
      }
      out << YAML::BeginMap;
      for (const auto& [k, v] : node.map) {
        out << YAML::Key << k << YAML::Value;
        Emit(out, v);
      }
      out << YAML::EndMap;
      return;
  }
}

}  // namespace

bool Range::Contains(double v) const {
  if (std::isnan(v)) return false;
  if (min_open ? !(v > min) : !(v >= min)) return false;
  if (max_open ? !(v < max) : !(v <= max)) return false;
  return true;
}

bool Range::ContainsInteger(int64_t v) const {
  // Exactly, not through a double (which rounds 9e18 + 1 to 9e18). A finite bound beyond int64
  // excludes nothing on its side.
  constexpr double kInt64Limit = 9.2e18;
  if (!std::isinf(min) && std::fabs(min) < kInt64Limit) {
    const int64_t lo = min_open ? static_cast<int64_t>(std::floor(min)) + 1 : static_cast<int64_t>(std::ceil(min));
    if (v < lo) return false;
  } else if (min > 0) {
    return false;
  }
  if (!std::isinf(max) && std::fabs(max) < kInt64Limit) {
    const int64_t hi = max_open ? static_cast<int64_t>(std::ceil(max)) - 1 : static_cast<int64_t>(std::floor(max));
    if (v > hi) return false;
  } else if (max < 0) {
    return false;
  }
  return true;
}

std::string Range::ToString() const {
  return std::string(min_open || std::isinf(min) ? "(" : "[") + FormatNumber(min) + ", " +
         FormatNumber(max) + (max_open || std::isinf(max) ? ")" : "]");
}

Result<int64_t> ParseByteSize(std::string_view text) {
  std::string t(text);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  size_t pos = 0;
  while (pos < t.size() && (std::isdigit(static_cast<unsigned char>(t[pos])) || t[pos] == '.')) ++pos;
  std::string number = t.substr(0, pos);
  std::string unit = ToLower(t.substr(pos));
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  auto value = ParseDouble(number);
  const std::string hint = "expected a byte size such as 512MiB, 8GiB, 1.5GB or 1000000";
  if (!value || number.empty()) return InvalidArgumentError("\"" + t + "\" is not a byte size; " + hint);
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1.0},           {"b", 1.0},          {"kb", 1e3},          {"mb", 1e6},
      {"gb", 1e9},         {"tb", 1e12},        {"kib", 1024.0},      {"mib", 1048576.0},
      {"gib", 1073741824.0}, {"tib", 1099511627776.0}};
  for (const auto& [name, mult] : kUnits) {
    if (unit == name) {
      double bytes = *value * mult;
      if (!(bytes < 9.2e18)) return InvalidArgumentError("\"" + t + "\" is too large");
      if (bytes != std::floor(bytes)) {
        return InvalidArgumentError("\"" + t + "\" is not a whole number of bytes");
      }
      return static_cast<int64_t>(bytes);
    }
  }
  return InvalidArgumentError("\"" + t + "\" has an unknown unit \"" + t.substr(pos) + "\"; " + hint);
}

std::string FormatByteSize(int64_t bytes) {
  static const std::pair<const char*, int64_t> kUnits[] = {
      {"TiB", int64_t{1} << 40}, {"GiB", int64_t{1} << 30}, {"MiB", int64_t{1} << 20},
      {"KiB", int64_t{1} << 10}};
  if (bytes > 0) {
    for (const auto& [name, mult] : kUnits) {
      if (bytes % mult == 0) return std::to_string(bytes / mult) + name;
    }
  }
  return std::to_string(bytes);
}

int EditDistance(std::string_view a, std::string_view b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      int sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

struct ConfigBinder::Impl {
  Node root;
  Node resolved;
  std::string source;
  std::set<std::string> known_leaves;    // read by a getter (whole subtree consumed)
  std::set<std::string> known_sections;  // strict prefixes of known leaves
  std::vector<std::string> known_order;  // for deterministic suggestions
  std::vector<KeySpec> keys;             // what each getter declared, in binding order
  std::set<std::string> declared;
  std::vector<std::string> errors;
  bool finished = false;

  const Node* Find(std::string_view path) const {
    const Node* cur = &root;
    for (const auto& seg : SplitPath(path)) {
      if (cur->kind != Node::Kind::kMap) return nullptr;
      cur = cur->Find(seg);
      if (cur == nullptr) return nullptr;
    }
    return cur;
  }

  void MarkKnown(std::string_view path) {
    std::string p(path);
    if (known_leaves.insert(p).second) known_order.push_back(p);
    size_t dot = p.rfind('.');
    while (dot != std::string::npos) {
      p.resize(dot);
      if (known_sections.insert(p).second) known_order.push_back(p);
      dot = p.rfind('.');
    }
  }

  void SetResolved(std::string_view path, Node value) {
    Node* cur = &resolved;
    cur->kind = Node::Kind::kMap;
    auto parts = SplitPath(path);
    for (size_t i = 0; i < parts.size(); ++i) {
      Node* next = cur->Find(parts[i]);
      if (next == nullptr) {
        cur->map.emplace_back(parts[i], Node{});
        next = &cur->map.back().second;
      }
      if (i + 1 < parts.size() && next->kind != Node::Kind::kMap) {
        *next = Node{};
        next->kind = Node::Kind::kMap;
      }
      cur = next;
    }
    *cur = std::move(value);
  }

  void Error(std::string_view path, const std::string& message, const Node* node) {
    std::string line = std::string(path) + ": " + message;
    if (node != nullptr && !node->where.empty()) line += " (" + node->where + ")";
    errors.push_back(std::move(line));
  }

  // Marks `path` known and records what its getter declared (the first declaration stands).
  void Declare(std::string_view path, KeySpec::Type type, Range range = Range::Any(),
               const std::vector<std::string>& choices = {}) {
    MarkKnown(path);
    if (declared.insert(std::string(path)).second) keys.push_back(KeySpec{std::string(path), type, range, choices});
  }

  // Declares `path` and reads it as a finite number within `range` (kFloat: one that a 32-bit
  // float holds without becoming inf or 0). Returns the value, or nullopt when
  // the key is absent/null (the caller keeps its default) or invalid (error recorded).
  std::optional<double> ReadNumber(std::string_view path, KeySpec::Type type, Range range) {
    Declare(path, type, range);
    const Node* node = Find(path);
    if (node == nullptr || node->kind == Node::Kind::kNull) return std::nullopt;
    std::optional<double> v;
    if (node->kind == Node::Kind::kScalar) v = ParseDouble(node->scalar);
    if (!v || !std::isfinite(*v)) {
      Error(path, std::string(v ? "expected a finite number" : "expected a number") + ", got " + Describe(*node), node);
      return std::nullopt;
    }
    if (!range.Contains(*v)) {
      Error(path, node->scalar + " is out of range " + range.ToString(), node);
      return std::nullopt;
    }
    if (type == KeySpec::Type::kFloat) {  // neither overflows to inf nor underflows to 0
      const float f = static_cast<float>(*v);
      if (!std::isfinite(f) || (f == 0.0f && *v != 0.0)) {
        Error(path, node->scalar + " is beyond what a 32-bit float holds (" +
                        FormatFloat(std::numeric_limits<float>::denorm_min()) + " to " +
                        FormatFloat(std::numeric_limits<float>::max()) + " in magnitude, or 0)",
              node);
        return std::nullopt;
      }
    }
    return v;
  }

  std::string Suggest(const std::string& unknown) const {
    std::string best;
    int best_score = 1 << 30;
    auto last = [](const std::string& p) {
      size_t dot = p.rfind('.');
      return dot == std::string::npos ? p : p.substr(dot + 1);
    };
    auto parent = [](const std::string& p) {
      size_t dot = p.rfind('.');
      return dot == std::string::npos ? std::string() : p.substr(0, dot);
    };
    const std::string unknown_last = last(unknown);
    for (const auto& cand : known_order) {
      if (cand == unknown) continue;
      int score = EditDistance(unknown, cand);
      // A right key under the wrong section ("hidden" at top level -> model.hidden).
      int by_last = EditDistance(unknown_last, last(cand)) + (parent(cand) == parent(unknown) ? 0 : 2);
      score = std::min(score, by_last);
      if (score < best_score) {
        best_score = score;
        best = cand;
      }
    }
    int limit = std::max<int>(2, static_cast<int>(unknown_last.size()) / 2);
    return best_score <= limit ? best : std::string();
  }

  void CheckUnknown(const Node& map, const std::string& prefix) {
    for (const auto& [key, child] : map.map) {
      std::string full = prefix.empty() ? key : prefix + "." + key;
      if (known_leaves.count(full)) continue;
      if (known_sections.count(full)) {
        if (child.kind == Node::Kind::kMap) {
          CheckUnknown(child, full);
        } else if (child.kind != Node::Kind::kNull) {
          Error(full, "expected a section (a map of keys), got " + Describe(child), &child);
        }
        continue;
      }
      std::string msg = "unknown key";
      std::string suggestion = Suggest(full);
      if (!suggestion.empty()) msg += "; did you mean " + suggestion + "?";
      Error(full, msg, &child);
    }
  }
};

ConfigBinder::ConfigBinder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ConfigBinder::ConfigBinder(ConfigBinder&&) noexcept = default;
ConfigBinder& ConfigBinder::operator=(ConfigBinder&&) noexcept = default;
ConfigBinder::~ConfigBinder() = default;

Result<ConfigBinder> ConfigBinder::FromYamlString(std::string_view text, std::string source) {
  RECTRAIN_ASSIGN_OR_RETURN(Node root, ParseYaml(text, source));
  if (root.kind == Node::Kind::kNull) {
    root.kind = Node::Kind::kMap;
  } else if (root.kind != Node::Kind::kMap) {
    return InvalidArgumentError(source + ": the top level of a config must be a map of keys, got " +
                                Describe(root));
  }
  auto impl = std::make_unique<Impl>();
  impl->root = std::move(root);
  impl->source = std::move(source);
  impl->resolved.kind = Node::Kind::kMap;
  return ConfigBinder(std::move(impl));
}

Result<ConfigBinder> ConfigBinder::FromYamlFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot read config file " + path);
  // One byte past the limit is enough to refuse it, whatever the file is (a FIFO, /dev/zero).
  std::string text(static_cast<size_t>(kMaxConfigBytes) + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return DataLossError("cannot read config file " + path);
  text.resize(static_cast<size_t>(in.gcount()));
  return FromYamlString(text, path);
}

Status ConfigBinder::ApplySet(std::string_view assignment) {
  const std::string where = "--set " + std::string(assignment);
  size_t eq = assignment.find('=');
  if (eq == std::string_view::npos) {
    return InvalidArgumentError(where + ": expected KEY=VALUE, e.g. --set model.hidden=[256,128]");
  }
  std::string path(assignment.substr(0, eq));
  std::string text(assignment.substr(eq + 1));
  auto parts = SplitPath(path);
  for (const auto& p : parts) {
    if (p.empty()) return InvalidArgumentError(where + ": empty key segment in \"" + path + "\"");
  }
  if (parts.size() > static_cast<size_t>(kMaxConfigDepth)) {
    return InvalidArgumentError(where.substr(0, 80) + "...: a key path of " + std::to_string(parts.size()) +
                                " segments (a config nests at most " + std::to_string(kMaxConfigDepth) + " deep)");
  }
  Node value;
  ParseFailure failure = ParseFailure::kNone;
  auto parsed = ParseYaml(text, "--set " + path, &failure);
  if (!parsed.ok() && failure != ParseFailure::kSyntax) return parsed.status();
  const std::string lower_text = ToLower(text);
  const bool null_text = text.empty() || lower_text == "null" || lower_text == "~";
  if (parsed.ok() && (parsed->kind != Node::Kind::kNull || null_text)) {
    value = std::move(parsed).value();
  } else {
    value = Scalar(text, true);  // not valid YAML: take the text literally
  }
  SetWhere(&value, where);
  Node* cur = &impl_->root;
  std::string so_far;
  for (size_t i = 0; i < parts.size(); ++i) {
    so_far += (i ? "." : "") + parts[i];
    Node* next = cur->Find(parts[i]);
    if (i + 1 == parts.size()) {
      if (next == nullptr) {
        cur->map.emplace_back(parts[i], std::move(value));
      } else {
        *next = std::move(value);
      }
      return OkStatus();
    }
    if (next == nullptr) {
      Node section;
      section.kind = Node::Kind::kMap;
      section.where = where;
      cur->map.emplace_back(parts[i], std::move(section));
      next = &cur->map.back().second;
    } else if (next->kind == Node::Kind::kNull) {
      next->kind = Node::Kind::kMap;
    } else if (next->kind != Node::Kind::kMap) {
      return InvalidArgumentError(where + ": " + so_far + " is " + Describe(*next) +
                                  ", not a section, so it has no key \"" + parts[i + 1] + "\"");
    }
    cur = next;
  }
  return OkStatus();
}

int64_t ConfigBinder::Int(std::string_view path, int64_t def, Range range) {
  impl_->Declare(path, KeySpec::Type::kInt, range);
  int64_t result = def;
  const Node* node = impl_->Find(path);
  if (node != nullptr && node->kind != Node::Kind::kNull) {
    std::optional<int64_t> v;
    if (node->kind == Node::Kind::kScalar) v = ParseInt(node->scalar);
    if (!v) {
      impl_->Error(path, "expected an integer, got " + Describe(*node), node);
    } else if (!range.ContainsInteger(*v)) {
      impl_->Error(path, std::to_string(*v) + " is out of range " + range.ToString(), node);
    } else {
      result = *v;
    }
  }
  impl_->SetResolved(path, Scalar(std::to_string(result)));
  return result;
}

double ConfigBinder::Double(std::string_view path, double def, Range range) {
  const double result = impl_->ReadNumber(path, KeySpec::Type::kDouble, range).value_or(def);
  impl_->SetResolved(path, Scalar(FormatDouble(result)));
  return result;
}

float ConfigBinder::Float(std::string_view path, float def, Range range) {
  const std::optional<double> v = impl_->ReadNumber(path, KeySpec::Type::kFloat, range);
  const float result = v ? static_cast<float>(*v) : def;
  impl_->SetResolved(path, Scalar(FormatFloat(result)));
  return result;
}

bool ConfigBinder::Bool(std::string_view path, bool def) {
  impl_->Declare(path, KeySpec::Type::kBool);
  bool result = def;
  const Node* node = impl_->Find(path);
  if (node != nullptr && node->kind != Node::Kind::kNull) {
    std::optional<bool> v;
    if (node->kind == Node::Kind::kScalar) v = ParseBool(node->scalar);
    if (!v) {
      impl_->Error(path, "expected true or false, got " + Describe(*node), node);
    } else {
      result = *v;
    }
  }
  impl_->SetResolved(path, Scalar(result ? "true" : "false"));
  return result;
}

std::string ConfigBinder::String(std::string_view path, std::string def,
                                 const std::vector<std::string>& choices) {
  impl_->Declare(path, KeySpec::Type::kString, Range::Any(), choices);
  std::string result = std::move(def);
  const Node* node = impl_->Find(path);
  if (node != nullptr && node->kind != Node::Kind::kNull) {
    if (node->kind != Node::Kind::kScalar) {
      impl_->Error(path, "expected a string, got " + Describe(*node), node);
    } else if (!choices.empty() &&
               std::find(choices.begin(), choices.end(), node->scalar) == choices.end()) {
      std::string list;
      std::string best;
      int best_d = 1 << 30;
      for (const auto& c : choices) {
        list += (list.empty() ? "" : ", ") + c;
        int d = EditDistance(ToLower(node->scalar), ToLower(c));
        if (d < best_d) {
          best_d = d;
          best = c;
        }
      }
      std::string msg = "\"" + node->scalar + "\" is not one of " + list;
      if (best_d <= std::max<int>(2, static_cast<int>(node->scalar.size()) / 2)) {
        msg += "; did you mean " + best + "?";
      }
      impl_->Error(path, msg, node);
    } else {
      result = node->scalar;
    }
  }
  impl_->SetResolved(path, Scalar(result, true));
  return result;
}

std::vector<std::string> ConfigBinder::StringList(std::string_view path,
                                                  std::vector<std::string> def) {
  impl_->Declare(path, KeySpec::Type::kStringList);
  std::vector<std::string> result = std::move(def);
  const Node* node = impl_->Find(path);
  if (node != nullptr && node->kind != Node::Kind::kNull) {
    if (node->kind == Node::Kind::kScalar) {
      result = {node->scalar};
    } else if (node->kind == Node::Kind::kList) {
      std::vector<std::string> items;
      bool ok = true;
      for (const auto& item : node->list) {
        if (item.kind != Node::Kind::kScalar) {
          impl_->Error(path, "expected a list of strings, got an item " + Describe(item), &item);
          ok = false;
          break;
        }
        items.push_back(item.scalar);
      }
      if (ok) result = std::move(items);
    } else {
      impl_->Error(path, "expected a string or a list of strings, got " + Describe(*node), node);
    }
  }
  Node out;
  out.kind = Node::Kind::kList;
  for (const auto& s : result) out.list.push_back(Scalar(s, true));
  impl_->SetResolved(path, std::move(out));
  return result;
}

// IntList and DoubleList: a list (or one scalar) of numbers that `parse` accepts, each in
// `range`; `what` names them in errors ("integers", "numbers").
template <typename T, typename Parse, typename Format>
std::vector<T> ConfigBinder::NumberList(std::string_view path, std::vector<T> def, Range range, KeySpec::Type list_type,
                                        const char* what,
                                        Parse parse, Format format) {
  impl_->Declare(path, list_type, range);
  std::vector<T> result = std::move(def);
  const Node* node = impl_->Find(path);
  if (node != nullptr && node->kind != Node::Kind::kNull) {
    std::vector<const Node*> items;
    if (node->kind == Node::Kind::kList) {
      for (const auto& item : node->list) items.push_back(&item);
    } else if (node->kind == Node::Kind::kScalar && parse(node->scalar)) {
      items.push_back(node);  // a single number is a one-element list
    }
    if (items.empty() && node->kind != Node::Kind::kList) {
      impl_->Error(path, std::string("expected a list of ") + what + ", got " + Describe(*node), node);
    } else {
      std::vector<T> values;
      bool ok = true;
      for (const Node* item : items) {
        std::optional<T> v;
        if (item->kind == Node::Kind::kScalar) v = parse(item->scalar);
        if (!v) {
          impl_->Error(path, std::string("expected a list of ") + what + ", got an item " + Describe(*item), item);
          ok = false;
          break;
        }
        const bool in_range = [&] {
          if constexpr (std::is_integral_v<T>) return range.ContainsInteger(*v);
          return range.Contains(static_cast<double>(*v));
        }();
        if (!in_range) {
          impl_->Error(path, "item " + format(*v) + " is out of range " + range.ToString(), item);
          ok = false;
          break;
        }
        values.push_back(*v);
      }
      if (ok) result = std::move(values);
    }
  }
  Node out;
  out.kind = Node::Kind::kList;
  for (T v : result) out.list.push_back(Scalar(format(v)));
  impl_->SetResolved(path, std::move(out));
  return result;
}

std::vector<int64_t> ConfigBinder::IntList(std::string_view path, std::vector<int64_t> def, Range range) {
  return NumberList<int64_t>(path, std::move(def), range, KeySpec::Type::kIntList, "integers", ParseInt,
                             [](int64_t v) { return std::to_string(v); });
}

std::vector<double> ConfigBinder::DoubleList(std::string_view path, std::vector<double> def, Range range) {
  auto parse_finite = [](std::string_view text) -> std::optional<double> {
    const std::optional<double> v = ParseDouble(text);
    return v && std::isfinite(*v) ? v : std::nullopt;
  };
  return NumberList<double>(path, std::move(def), range, KeySpec::Type::kDoubleList, "numbers", parse_finite,
                            FormatDouble);
}

std::map<std::string, int64_t> ConfigBinder::IntMap(std::string_view path,
                                                    std::map<std::string, int64_t> def,
                                                    Range range) {
  impl_->Declare(path, KeySpec::Type::kIntMap, range);
  std::map<std::string, int64_t> result = std::move(def);
  const Node* node = impl_->Find(path);
  if (node != nullptr && node->kind != Node::Kind::kNull) {
    if (node->kind != Node::Kind::kMap) {
      impl_->Error(path, "expected a map of name: integer, got " + Describe(*node), node);
    } else {
      std::map<std::string, int64_t> values;
      bool ok = true;
      for (const auto& [k, item] : node->map) {
        std::string item_path = std::string(path) + "." + k;
        std::optional<int64_t> v;
        if (item.kind == Node::Kind::kScalar) v = ParseInt(item.scalar);
        if (!v) {
          impl_->Error(item_path, "expected an integer, got " + Describe(item), &item);
          ok = false;
        } else if (!range.ContainsInteger(*v)) {
          impl_->Error(item_path, std::to_string(*v) + " is out of range " + range.ToString(), &item);
          ok = false;
        } else {
          values[k] = *v;
        }
      }
      if (ok) result = std::move(values);
    }
  }
  Node out;
  out.kind = Node::Kind::kMap;
  for (const auto& [k, v] : result) out.map.emplace_back(k, Scalar(std::to_string(v)));
  impl_->SetResolved(path, std::move(out));
  return result;
}

std::map<std::string, std::string> ConfigBinder::StringMap(
    std::string_view path, std::map<std::string, std::string> def,
    const std::vector<std::string>& choices) {
  impl_->Declare(path, KeySpec::Type::kStringMap, Range::Any(), choices);
  std::map<std::string, std::string> result = std::move(def);
  const Node* node = impl_->Find(path);
  if (node != nullptr && node->kind != Node::Kind::kNull) {
    if (node->kind != Node::Kind::kMap) {
      impl_->Error(path, "expected a map of name: value, got " + Describe(*node), node);
    } else {
      std::map<std::string, std::string> values;
      bool ok = true;
      for (const auto& [k, item] : node->map) {
        const std::string item_path = std::string(path) + "." + k;
        if (item.kind != Node::Kind::kScalar) {
          impl_->Error(item_path, "expected a string, got " + Describe(item), &item);
          ok = false;
        } else if (!choices.empty() &&
                   std::find(choices.begin(), choices.end(), item.scalar) == choices.end()) {
          std::string list;
          for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
          impl_->Error(item_path, "\"" + item.scalar + "\" is not one of " + list, &item);
          ok = false;
        } else {
          values[k] = item.scalar;
        }
      }
      if (ok) result = std::move(values);
    }
  }
  Node out;
  out.kind = Node::Kind::kMap;
  for (const auto& [k, v] : result) out.map.emplace_back(k, Scalar(v, true));
  impl_->SetResolved(path, std::move(out));
  return result;
}

int64_t ConfigBinder::Bytes(std::string_view path, int64_t def, Range range) {
  impl_->Declare(path, KeySpec::Type::kBytes, range);
  int64_t result = def;
  const Node* node = impl_->Find(path);
  if (node != nullptr && node->kind != Node::Kind::kNull) {
    if (node->kind != Node::Kind::kScalar) {
      impl_->Error(path, "expected a byte size such as 8GiB, got " + Describe(*node), node);
    } else {
      auto v = ParseByteSize(node->scalar);
      if (!v.ok()) {
        impl_->Error(path, v.status().message(), node);
      } else if (!range.ContainsInteger(*v)) {
        impl_->Error(path, node->scalar + " is out of range " + range.ToString() + " bytes", node);
      } else {
        result = *v;
      }
    }
  }
  impl_->SetResolved(path, Scalar(FormatByteSize(result), true));
  return result;
}

bool ConfigBinder::Has(std::string_view path) const {
  const Node* node = impl_->Find(path);
  return node != nullptr && node->kind != Node::Kind::kNull;
}

void ConfigBinder::AddError(std::string_view path, std::string_view message) {
  impl_->Error(path, std::string(message), impl_->Find(path));
}

Status ConfigBinder::Finish() {
  if (!impl_->finished) {
    impl_->finished = true;
    std::vector<std::string> bind_errors = std::move(impl_->errors);
    impl_->errors.clear();
    impl_->CheckUnknown(impl_->root, "");
    impl_->errors.insert(impl_->errors.end(), bind_errors.begin(), bind_errors.end());
  }
  const auto& errors = impl_->errors;
  if (errors.empty()) return OkStatus();
  if (errors.size() == 1) return InvalidArgumentError("invalid configuration: " + errors[0]);
  return InvalidArgumentError("invalid configuration (" + std::to_string(errors.size()) + " errors):\n  " +
                              JoinErrors(errors, "\n  "));
}

std::string ConfigBinder::ResolvedYaml() const {
  YAML::Emitter out;
  Emit(out, impl_->resolved);
  return std::string(out.c_str()) + "\n";
}

const std::vector<std::string>& ConfigBinder::errors() const { return impl_->errors; }

const std::vector<KeySpec>& ConfigBinder::keys() const { return impl_->keys; }

bool KeySpec::numeric() const {
  switch (type) {
    case Type::kInt:
    case Type::kFloat:
    case Type::kDouble:
    case Type::kIntList:
    case Type::kDoubleList:
    case Type::kIntMap:
    case Type::kBytes:
      return true;
    case Type::kBool:
    case Type::kString:
    case Type::kStringList:
    case Type::kStringMap:
      return false;
  }
  return false;
}

}  // namespace rectrain::config
