// rectrain/io/s3/xml.h: a small XML parser for the S3 API's responses (ListBucketResult, Error,
// InitiateMultipartUploadResult, ...): elements, text, the five predefined entities and numeric
// character references, CDATA, comments and the XML declaration. Attributes are skipped (S3's
// responses carry none we use); DOCTYPE is rejected (no entity expansion, so no "billion laughs").
// Limits: nesting depth 64; the caller bounds the document size.
//
// Thread safety: pure functions and value types.
//
// Example:
//   RECTRAIN_ASSIGN_OR_RETURN(s3::XmlNode root, s3::ParseXml(body));
//   for (const s3::XmlNode* c : root.Children("Contents")) keys.push_back(c->ChildText("Key"));
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "rectrain/base/result.h"

namespace rectrain::io::s3 {

struct XmlNode {
  std::string name;  // with any namespace prefix ("ListBucketResult", "s3:Key")
  std::string text;  // character data directly inside the element, entities decoded
  std::vector<XmlNode> children;

  // The first child named `name`, or null.
  const XmlNode* Child(std::string_view name) const;
  // Its text, or "" when there is no such child.
  std::string ChildText(std::string_view name) const;
  // Every child named `name`, in document order.
  std::vector<const XmlNode*> Children(std::string_view name) const;
};

// Parses one document (its root element). InvalidArgument naming the byte offset for malformed
// input: unbalanced or mismatched tags, an unknown entity, a DOCTYPE, nesting deeper than 64,
// content after the root.
Result<XmlNode> ParseXml(std::string_view doc);

}  // namespace rectrain::io::s3
