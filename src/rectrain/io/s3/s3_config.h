// rectrain/io/s3/s3_config.h: where the object store is and who we are, resolved the way the AWS
// CLI and SDKs resolve it, so existing setups work unchanged (docs/storage.md):
//   credentials  AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN), else the
//                profile's aws_access_key_id / aws_secret_access_key / aws_session_token in the
//                shared credentials file, then in the config file; none found: anonymous
//                (unsigned) requests, for public buckets.
//   profile      AWS_PROFILE (else AWS_DEFAULT_PROFILE, else "default"); files
//                AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials), AWS_CONFIG_FILE (~/.aws/config).
//   region       AWS_REGION, AWS_DEFAULT_REGION, the profile's `region`, else us-east-1.
//   endpoint     AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's `s3 = endpoint_url` or
//                `endpoint_url`, else https://s3.<region>.amazonaws.com.
//   addressing   the profile's `s3 = addressing_style` (path | virtual | auto) or
//                RECTRAIN_S3_ADDRESSING_STYLE; auto: path-style for an endpoint given as an IP
//                address or localhost and for bucket names with dots, virtual-hosted otherwise.
//   retries      AWS_MAX_ATTEMPTS or the profile's `max_attempts` (attempts per request, default
//                10); RECTRAIN_S3_RETRY_BASE_MS (first backoff, default 100) and
//                RECTRAIN_S3_RETRY_MAX_MS (cap, default 10000).
//   timeouts     RECTRAIN_S3_CONNECT_TIMEOUT_MS (default 10000); RECTRAIN_S3_STALL_TIMEOUT_MS: a
//                transfer that receives nothing for this long is cut and retried (default 30000).
//   TLS          https endpoints are verified against the system CA store, or AWS_CA_BUNDLE /
//                the profile's `ca_bundle`.
// Not supported: credential_process, SSO, assume-role profiles, instance/container metadata.
//
// Secrets never leave this struct in text: Describe() names where credentials came from, never
// their values.
//
// Thread safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "rectrain/base/named_enum.h"
#include "rectrain/base/result.h"
#include "rectrain/io/s3/sigv4.h"

namespace rectrain::io::s3 {

enum class AddressingStyle : uint8_t { kAuto, kPath, kVirtual };
inline constexpr NamedEnum<AddressingStyle>::Entry kAddressingStyleEntries[] = {
    {AddressingStyle::kPath, "path"}, {AddressingStyle::kVirtual, "virtual"}, {AddressingStyle::kAuto, "auto"}};
inline constexpr NamedEnum<AddressingStyle> kAddressingStyles(kAddressingStyleEntries);

struct S3Config {
  std::string endpoint;  // "scheme://host[:port]", no trailing slash
  std::string region = "us-east-1";
  AddressingStyle addressing = AddressingStyle::kAuto;
  Credentials credentials;
  std::string credentials_source;  // "environment", "profile default (~/.aws/credentials)", ...
  std::string ca_bundle;           // empty: the system CA store
  int max_attempts = 10;
  int64_t retry_base_ms = 100;
  int64_t retry_max_ms = 10000;
  int64_t connect_timeout_ms = 10000;
  int64_t stall_timeout_ms = 30000;

  // True when requests for `bucket` put the bucket in the path (http://host/bucket/key).
  bool UsePathStyle(std::string_view bucket) const;
  // One line for logs: endpoint, region, addressing, where credentials came from (no secrets).
  std::string Describe() const;
};

// Looks up an environment variable (std::getenv in production; a map in tests).
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup ProcessEnv();

// Resolves the configuration. InvalidArgument for a malformed value (naming the variable or the
// file and line), e.g. an endpoint without http:// or https://, or a non-numeric AWS_MAX_ATTEMPTS.
// A missing shared file is not an error.
Result<S3Config> ResolveS3Config(const EnvLookup& env);

}  // namespace rectrain::io::s3
