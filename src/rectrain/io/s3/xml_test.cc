#include "rectrain/io/s3/xml.h"

#include <gtest/gtest.h>

namespace rectrain::io::s3 {
namespace {

TEST(Xml, ParsesAListObjectsV2Page) {
  const char* doc =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<Name>b</Name><Prefix>p/</Prefix><KeyCount>2</KeyCount><IsTruncated>true</IsTruncated>"
      "<NextContinuationToken>1Ii5+/=</NextContinuationToken>"
      "<Contents><Key>p/a&amp;b &lt;1&gt;.tsv</Key><Size>10</Size><ETag>&quot;abc&quot;</ETag>"
      "<LastModified>2026-12-04T21:57:22.000Z</LastModified></Contents>"
      "<Contents><Key>p/&#x1234;&#65;</Key><Size>0</Size></Contents>"
      "<CommonPrefixes><Prefix>p/sub/</Prefix></CommonPrefixes>"
      "</ListBucketResult>";
  auto r = ParseXml(doc);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->name, "ListBucketResult");
  EXPECT_EQ(r->ChildText("IsTruncated"), "true");
  EXPECT_EQ(r->ChildText("NextContinuationToken"), "1Ii5+/=");
  auto contents = r->Children("Contents");
  ASSERT_EQ(contents.size(), 2u);
  EXPECT_EQ(contents[0]->ChildText("Key"), "p/a&b <1>.tsv");
  EXPECT_EQ(contents[0]->ChildText("ETag"), "\"abc\"");
  EXPECT_EQ(contents[1]->ChildText("Key"), "p/\xe1\x88\xb4" "A");
  EXPECT_EQ(r->Child("CommonPrefixes")->ChildText("Prefix"), "p/sub/");
  EXPECT_EQ(r->ChildText("Missing"), "");
  EXPECT_EQ(r->Child("Missing"), nullptr);
}

TEST(Xml, CdataCommentsSelfClosingAndAttributes) {
  auto r = ParseXml("<!-- c --><a x='1>2' y=\"z\"><b/><![CDATA[<raw&>]]><!-- in --><c k=\"v\">t</c></a>");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->text, "<raw&>");
  ASSERT_EQ(r->children.size(), 2u);
  EXPECT_EQ(r->children[0].name, "b");
  EXPECT_EQ(r->ChildText("c"), "t");
}

TEST(Xml, RejectsMalformedDocumentsWithTheOffset) {
  for (const char* bad : {"", "text", "<a>", "<a></b>", "<a>&bogus;</a>", "<a>&#xZZ;</a>", "<a></a><b/>",
                          "<!DOCTYPE a [<!ENTITY x \"y\">]><a/>", "<a x=\"1></a>", "<a><![CDATA[x</a>",
                          "<a>&#x110000;</a>", "<>x</>"}) {
    auto r = ParseXml(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("malformed XML at byte"), std::string::npos) << bad;
  }
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "<a>";
  for (int i = 0; i < 100; ++i) deep += "</a>";
  EXPECT_NE(ParseXml(deep).status().message().find("deeper than 64"), std::string::npos);
}

}  // namespace
}  // namespace rectrain::io::s3
