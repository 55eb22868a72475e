#include "rectrain/io/s3/s3_config.h"

#include <arpa/inet.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <map>

namespace rectrain::io::s3 {
namespace {

using Section = std::map<std::string, std::string>;  // "key" or "s3.key" (nested) -> value

std::string Trim(std::string_view s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return std::string(s.substr(a, b - a));
}

// The section `want` of an AWS shared file (INI; "key =" followed by indented "sub = value"
// lines is a nested section, as `s3 =` in ~/.aws/config). An unreadable file is an empty one.
Result<Section> ReadSection(const std::string& path, const std::string& want) {
  Section out;
  std::ifstream in(path);
  if (!in) return out;
  std::string line, nested;
  bool inside = false;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const std::string t = Trim(line);
    if (t.empty() || t[0] == '#' || t[0] == ';') continue;
    if (t[0] == '[') {
      if (t.back() != ']') return InvalidArgumentError(path + ":" + std::to_string(lineno) + ": unterminated section header \"" + t + "\"");
      inside = Trim(t.substr(1, t.size() - 2)) == want;
      nested.clear();
      continue;
    }
    if (!inside) continue;
    const size_t eq = t.find('=');
    if (eq == std::string::npos) {
      return InvalidArgumentError(path + ":" + std::to_string(lineno) + ": expected \"key = value\", got \"" + t + "\"");
    }
    const std::string key = Trim(t.substr(0, eq)), value = Trim(t.substr(eq + 1));
    const bool indented = std::isspace(static_cast<unsigned char>(line[0]));
    if (indented && !nested.empty()) {
      out[nested + "." + key] = value;
    } else if (value.empty()) {
      nested = key;  // "s3 =" opens a nested block
    } else {
      nested.clear();
      out[key] = value;
    }
  }
  return out;
}

std::string Get(const Section& s, const std::string& key) {
  auto it = s.find(key);
  return it == s.end() ? std::string() : it->second;
}

Result<int64_t> ParsePositive(const std::string& name, const std::string& value) {
  char* end = nullptr;
  const long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || v <= 0) {
    return InvalidArgumentError(name + " must be a positive integer, got \"" + value + "\"");
  }
  return static_cast<int64_t>(v);
}

bool IsIpOrLocalhost(const std::string& host) {
  if (host == "localhost" || host.ends_with(".localhost")) return true;
  unsigned char buf[16];
  if (::inet_pton(AF_INET, host.c_str(), buf) == 1) return true;
  std::string h = host;
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  return ::inet_pton(AF_INET6, h.c_str(), buf) == 1;
}

// Host of "scheme://host[:port]" (IPv6 in brackets kept with them).
std::string HostOf(const std::string& endpoint) {
  std::string rest = endpoint.substr(endpoint.find("://") + 3);
  if (!rest.empty() && rest[0] == '[') return rest.substr(0, rest.find(']') + 1);
  return rest.substr(0, rest.find(':'));
}

}  // namespace

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

bool S3Config::UsePathStyle(std::string_view bucket) const {
  if (addressing == AddressingStyle::kPath) return true;
  if (addressing == AddressingStyle::kVirtual) return false;
  return IsIpOrLocalhost(HostOf(endpoint)) || bucket.find('.') != std::string_view::npos;
}

std::string S3Config::Describe() const {
  return "endpoint " + endpoint + ", region " + region + ", addressing " + kAddressingStyles.Name(addressing) +
         ", credentials: " + credentials_source;
}

namespace {

// Where the settings come from, in the AWS CLI's order: the environment, then the profile's
// sections of the shared credentials and config files.
struct SettingSources {
  std::function<std::string(const char*)> var;  // an environment variable, "" when unset
  std::string profile, cred_file, config_file;
  Section creds, conf;
};

Result<SettingSources> ReadSources(const EnvLookup& env) {
  SettingSources s;
  s.var = [env](const char* name) { return env(name).value_or(""); };
  s.profile = s.var("AWS_PROFILE");
  if (s.profile.empty()) s.profile = s.var("AWS_DEFAULT_PROFILE");
  if (s.profile.empty()) s.profile = "default";
  const std::string home = s.var("HOME");
  s.cred_file = s.var("AWS_SHARED_CREDENTIALS_FILE");
  if (s.cred_file.empty() && !home.empty()) s.cred_file = home + "/.aws/credentials";
  s.config_file = s.var("AWS_CONFIG_FILE");
  if (s.config_file.empty() && !home.empty()) s.config_file = home + "/.aws/config";
  RECTRAIN_ASSIGN_OR_RETURN(s.creds, ReadSection(s.cred_file, s.profile));
  RECTRAIN_ASSIGN_OR_RETURN(s.conf, ReadSection(s.config_file, s.profile == "default" ? "default" : "profile " + s.profile));
  return s;
}

// The first non-empty of `candidates`, or "".
std::string FirstSet(std::initializer_list<std::string> candidates) {
  for (const std::string& c : candidates) {
    if (!c.empty()) return c;
  }
  return "";
}

Status ResolveCredentials(const SettingSources& s, S3Config& c) {
  if (!s.var("AWS_ACCESS_KEY_ID").empty()) {
    c.credentials = {s.var("AWS_ACCESS_KEY_ID"), s.var("AWS_SECRET_ACCESS_KEY"), s.var("AWS_SESSION_TOKEN")};
    c.credentials_source = "environment (AWS_ACCESS_KEY_ID)";
    if (c.credentials.secret_access_key.empty()) {
      return InvalidArgumentError("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not; set both, or neither");
    }
    return OkStatus();
  }
  for (const auto& [section, file] : {std::pair{&s.creds, &s.cred_file}, std::pair{&s.conf, &s.config_file}}) {
    if (Get(*section, "aws_access_key_id").empty()) continue;
    c.credentials = {Get(*section, "aws_access_key_id"), Get(*section, "aws_secret_access_key"),
                     Get(*section, "aws_session_token")};
    c.credentials_source = "profile " + s.profile + " (" + *file + ")";
    if (c.credentials.secret_access_key.empty()) {
      return InvalidArgumentError(*file + ": profile " + s.profile + " has aws_access_key_id but no aws_secret_access_key");
    }
    return OkStatus();
  }
  c.credentials_source = "none found (anonymous requests)";
  return OkStatus();
}

Status ResolveEndpoint(const SettingSources& s, S3Config& c) {
  const std::string region = FirstSet({s.var("AWS_REGION"), s.var("AWS_DEFAULT_REGION"), Get(s.conf, "region")});
  if (!region.empty()) c.region = region;
  c.endpoint = FirstSet({s.var("AWS_ENDPOINT_URL_S3"), s.var("AWS_ENDPOINT_URL"), Get(s.conf, "s3.endpoint_url"),
                         Get(s.conf, "endpoint_url")});
  if (c.endpoint.empty()) c.endpoint = "https://s3." + c.region + ".amazonaws.com";
  while (c.endpoint.size() > 1 && c.endpoint.back() == '/') c.endpoint.pop_back();
  if (!c.endpoint.starts_with("http://") && !c.endpoint.starts_with("https://")) {
    return InvalidArgumentError("the S3 endpoint \"" + c.endpoint +
                                "\" (AWS_ENDPOINT_URL or endpoint_url) must start with http:// or https://");
  }
  if (c.endpoint.find('@') != std::string::npos) {
    // user:password@host would carry a secret into every log line that names the endpoint.
    return InvalidArgumentError("the S3 endpoint must not hold credentials (user@host); set AWS_ACCESS_KEY_ID and "
                                "AWS_SECRET_ACCESS_KEY or a profile instead");
  }
  if (c.endpoint.find('/', c.endpoint.find("://") + 3) != std::string::npos) {
    return InvalidArgumentError("the S3 endpoint \"" + c.endpoint + "\" must be scheme://host[:port], without a path");
  }
  const std::string style = FirstSet({s.var("RECTRAIN_S3_ADDRESSING_STYLE"), Get(s.conf, "s3.addressing_style")});
  if (!style.empty()) {
    RECTRAIN_ASSIGN_OR_RETURN(c.addressing, kAddressingStyles.Parse(style, "addressing_style"));
  }
  c.ca_bundle = FirstSet({s.var("AWS_CA_BUNDLE"), Get(s.conf, "ca_bundle")});
  return OkStatus();
}

Status ResolveRetries(const SettingSources& s, S3Config& c) {
  struct Knob {
    const char* name;
    std::string value;
    int64_t* out;
  };
  int64_t attempts = c.max_attempts;
  for (Knob k : {Knob{"AWS_MAX_ATTEMPTS", FirstSet({s.var("AWS_MAX_ATTEMPTS"), Get(s.conf, "max_attempts")}), &attempts},
                 Knob{"RECTRAIN_S3_RETRY_BASE_MS", s.var("RECTRAIN_S3_RETRY_BASE_MS"), &c.retry_base_ms},
                 Knob{"RECTRAIN_S3_RETRY_MAX_MS", s.var("RECTRAIN_S3_RETRY_MAX_MS"), &c.retry_max_ms},
                 Knob{"RECTRAIN_S3_CONNECT_TIMEOUT_MS", s.var("RECTRAIN_S3_CONNECT_TIMEOUT_MS"), &c.connect_timeout_ms},
                 Knob{"RECTRAIN_S3_STALL_TIMEOUT_MS", s.var("RECTRAIN_S3_STALL_TIMEOUT_MS"), &c.stall_timeout_ms}}) {
    if (k.value.empty()) continue;
    RECTRAIN_ASSIGN_OR_RETURN(*k.out, ParsePositive(k.name, k.value));
  }
  c.max_attempts = static_cast<int>(std::min<int64_t>(attempts, 100));
  return OkStatus();
}

}  // namespace

Result<S3Config> ResolveS3Config(const EnvLookup& env) {
  RECTRAIN_ASSIGN_OR_RETURN(const SettingSources sources, ReadSources(env));
  S3Config c;
  RECTRAIN_RETURN_IF_ERROR(ResolveCredentials(sources, c));
  RECTRAIN_RETURN_IF_ERROR(ResolveEndpoint(sources, c));
  RECTRAIN_RETURN_IF_ERROR(ResolveRetries(sources, c));
  return c;
}

}  // namespace rectrain::io::s3
