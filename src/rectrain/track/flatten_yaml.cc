// rectrain/track/flatten_yaml.cc: FlattenYaml (declared in tracking_store.h). yaml-cpp throws;
// the exceptions are caught here and become InvalidArgument.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <exception>

#include "rectrain/track/tracking_store.h"

namespace rectrain::track {
namespace {

void Flatten(const YAML::Node& node, const std::string& prefix, std::vector<KeyValue>& out) {
  auto join = [&](const std::string& k) { return prefix.empty() ? k : prefix + "." + k; };
  switch (node.Type()) {
    case YAML::NodeType::Map:
      if (node.size() == 0) out.emplace_back(prefix, "{}");
      for (const auto& kv : node) Flatten(kv.second, join(kv.first.as<std::string>()), out);
      break;
    case YAML::NodeType::Sequence:
      if (node.size() == 0) out.emplace_back(prefix, "[]");
      for (size_t i = 0; i < node.size(); ++i) Flatten(node[i], join(std::to_string(i)), out);
      break;
    case YAML::NodeType::Scalar:
      out.emplace_back(prefix, node.Scalar());
      break;
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      out.emplace_back(prefix, "null");
      break;
  }
}

}  // namespace

Result<std::vector<KeyValue>> FlattenYaml(std::string_view yaml) {
  std::vector<KeyValue> out;
  try {
    YAML::Node root = YAML::Load(std::string(yaml));
    if (root.IsNull()) return out;
    Flatten(root, "", out);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError("config YAML does not parse: " + std::string(e.what()));
  } catch (const std::exception& e) {
    return InvalidArgumentError("config YAML does not parse: " + std::string(e.what()));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace rectrain::track
