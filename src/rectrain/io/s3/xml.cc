#include "rectrain/io/s3/xml.h"

#include <cstdint>

namespace rectrain::io::s3 {
namespace {

constexpr int kMaxDepth = 64;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsNameChar(char c) {
  return !IsSpace(c) && c != '>' && c != '/' && c != '=' && c != '<' && c != '"' && c != '\'';
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Parser {
 public:
  explicit Parser(std::string_view doc) : s_(doc) {}

  Result<XmlNode> Document() {
    RECTRAIN_RETURN_IF_ERROR(SkipMisc());
    if (pos_ >= s_.size() || s_[pos_] != '<') return Error("expected the root element");
    XmlNode root;
    RECTRAIN_RETURN_IF_ERROR(Element(0, &root));
    RECTRAIN_RETURN_IF_ERROR(SkipMisc());
    if (pos_ != s_.size()) return Error("content after the root element");
    return root;
  }

 private:
  Status Error(const std::string& what) const {
    return InvalidArgumentError("malformed XML at byte " + std::to_string(pos_) + ": " + what);
  }
  bool StartsWith(std::string_view p) const { return s_.substr(pos_).starts_with(p); }
  Status SkipPast(std::string_view end, std::string_view what) {
    const size_t e = s_.find(end, pos_);
    if (e == std::string_view::npos) return Error("unterminated " + std::string(what));
    pos_ = e + end.size();
    return OkStatus();
  }
  // Whitespace, comments and processing instructions (the XML declaration) between elements.
  Status SkipMisc() {
    for (;;) {
      while (pos_ < s_.size() && IsSpace(s_[pos_])) ++pos_;
      if (StartsWith("<?")) {
        RECTRAIN_RETURN_IF_ERROR(SkipPast("?>", "processing instruction"));
      } else if (StartsWith("<!--")) {
        RECTRAIN_RETURN_IF_ERROR(SkipPast("-->", "comment"));
      } else if (StartsWith("<!")) {
        return Error("DOCTYPE and other declarations are not accepted");
      } else {
        return OkStatus();
      }
    }
  }
  Status Entity(std::string* out) {
    const size_t semi = s_.find(';', pos_);
    if (semi == std::string_view::npos || semi - pos_ > 12) return Error("unterminated entity");
    const std::string_view name = s_.substr(pos_ + 1, semi - pos_ - 1);
    if (name == "amp") *out += '&';
    else if (name == "lt") *out += '<';
    else if (name == "gt") *out += '>';
    else if (name == "quot") *out += '"';
    else if (name == "apos") *out += '\'';
    else if (name.size() >= 2 && name[0] == '#') {
      const bool hex = name[1] == 'x' || name[1] == 'X';
      const std::string digits(name.substr(hex ? 2 : 1));
      if (digits.empty()) return Error("empty character reference");
      uint32_t cp = 0;
      for (char c : digits) {
        int v = (c >= '0' && c <= '9') ? c - '0' : (hex && c >= 'a' && c <= 'f') ? c - 'a' + 10
                : (hex && c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
        if (v < 0) return Error("bad character reference &" + std::string(name) + ";");
        cp = cp * (hex ? 16 : 10) + static_cast<uint32_t>(v);
        if (cp > 0x10FFFF) return Error("character reference out of range");
      }
      AppendUtf8(cp, out);
    } else {
      return Error("unknown entity &" + std::string(name) + ";");
    }
    pos_ = semi + 1;
    return OkStatus();
  }
  // At '<' of a start tag: parses the element, its content and its end tag.
  Status Element(int depth, XmlNode* node) {
    if (depth >= kMaxDepth) return Error("elements nested deeper than " + std::to_string(kMaxDepth));
    ++pos_;
    const size_t name_start = pos_;
    while (pos_ < s_.size() && IsNameChar(s_[pos_])) ++pos_;
    if (pos_ == name_start) return Error("expected an element name");
    node->name = std::string(s_.substr(name_start, pos_ - name_start));
    // Attributes: skipped, honouring quotes.
    for (;;) {
      if (pos_ >= s_.size()) return Error("unterminated start tag <" + node->name);
      const char c = s_[pos_];
      if (c == '"' || c == '\'') {
        const size_t e = s_.find(c, pos_ + 1);
        if (e == std::string_view::npos) return Error("unterminated attribute value");
        pos_ = e + 1;
      } else if (c == '/' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '>') {
        pos_ += 2;
        return OkStatus();
      } else if (c == '>') {
        ++pos_;
        break;
      } else {
        ++pos_;
      }
    }
    return Content(depth, node);
  }
  Status Content(int depth, XmlNode* node) {
    for (;;) {
      if (pos_ >= s_.size()) return Error("missing </" + node->name + ">");
      const char c = s_[pos_];
      if (c == '&') {
        RECTRAIN_RETURN_IF_ERROR(Entity(&node->text));
      } else if (c != '<') {
        size_t e = s_.find_first_of("<&", pos_);
        if (e == std::string_view::npos) e = s_.size();
        node->text.append(s_.substr(pos_, e - pos_));
        pos_ = e;
      } else if (StartsWith("</")) {
        pos_ += 2;
        const size_t name_start = pos_;
        while (pos_ < s_.size() && IsNameChar(s_[pos_])) ++pos_;
        if (s_.substr(name_start, pos_ - name_start) != node->name) {
          return Error("</" + std::string(s_.substr(name_start, pos_ - name_start)) + "> closes <" + node->name + ">");
        }
        while (pos_ < s_.size() && IsSpace(s_[pos_])) ++pos_;
        if (pos_ >= s_.size() || s_[pos_] != '>') return Error("unterminated end tag");
        ++pos_;
        return OkStatus();
      } else if (StartsWith("<![CDATA[")) {
        const size_t e = s_.find("]]>", pos_);
        if (e == std::string_view::npos) return Error("unterminated CDATA section");
        node->text.append(s_.substr(pos_ + 9, e - pos_ - 9));
        pos_ = e + 3;
      } else if (StartsWith("<!--")) {
        RECTRAIN_RETURN_IF_ERROR(SkipPast("-->", "comment"));
      } else if (StartsWith("<?")) {
        RECTRAIN_RETURN_IF_ERROR(SkipPast("?>", "processing instruction"));
      } else if (StartsWith("<!")) {
        return Error("declarations are not accepted inside elements");
      } else {
        node->children.emplace_back();
        RECTRAIN_RETURN_IF_ERROR(Element(depth + 1, &node->children.back()));
      }
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

const XmlNode* XmlNode::Child(std::string_view n) const {
  for (const XmlNode& c : children) {
    if (c.name == n) return &c;
  }
  return nullptr;
}

std::string XmlNode::ChildText(std::string_view n) const {
  const XmlNode* c = Child(n);
  return c ? c->text : std::string();
}

std::vector<const XmlNode*> XmlNode::Children(std::string_view n) const {
  std::vector<const XmlNode*> out;
  for (const XmlNode& c : children) {
    if (c.name == n) out.push_back(&c);
  }
  return out;
}

Result<XmlNode> ParseXml(std::string_view doc) { return Parser(doc).Document(); }

}  // namespace rectrain::io::s3
