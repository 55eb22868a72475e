// `rectrain data produce`: replays the lines of files into a Kafka topic or a Redis stream at a
// given rate (stream/producer.h; docs/online.md).
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "rectrain/cli/commands.h"
#include "rectrain/cli/exit_codes.h"
#include "rectrain/cli/flags.h"
#include "rectrain/cli/stop_signals.h"
#include "rectrain/stream/producer.h"

namespace rectrain::cli {

int RunDataProduce(const std::vector<std::string>& args) {
  const char* kCmd = "rectrain data produce";
  std::string file, rate = "0", to, field = "row";
  int64_t max_messages = 0, repeat = 1, max_len = 0;
  bool header = false, quiet = false;
  std::vector<std::string> keys, more_files;
  FlagParser flags(kCmd, "FILE --to kafka://HOSTS/TOPIC|redis://HOST:PORT/KEY [--rate N] [--max-messages N] [--repeat N]",
                   "Sends every line of FILE as one message, at --rate messages per second (0: as fast\n"
                   "as the broker takes them): Kafka messages spread over the topic's partitions in turn,\n"
                   "or Redis entries (XADD KEY * row LINE) spread over --key keys in turn. Event time is\n"
                   "the time of sending. SIGINT/SIGTERM stop after the current message.");
  flags.Positional("FILE", &file, true, "a text file in the training layout (one row per line)");
  flags.Repeated("file", &more_files, "more files, sent after FILE");
  flags.String("to", &to, "kafka://HOST:PORT[,HOST:PORT]/TOPIC or redis://HOST:PORT/KEY");
  flags.String("rate", &rate, "messages per second (default 0: unpaced)");
  flags.Int("max-messages", &max_messages, "stop after this many messages (default 0: every line)");
  flags.Int("repeat", &repeat, "pass over the files this many times (default 1; 0: until stopped)");
  flags.Bool("header", &header, "the first line of each file is a header, not a row");
  flags.Repeated("key", &keys, "redis: a stream key to spread over (default: the URL's key)");
  flags.String("field", &field, "redis: the entry field holding the row (default row)");
  flags.Int("max-len", &max_len, "redis: trim each stream to about this many entries (XADD MAXLEN ~; 0: no trim)");
  flags.Bool("quiet", &quiet, "print only the result");
  if (std::optional<int> exit = ParseOrExit(flags, args, kCmd)) return *exit;
  if (to.empty()) return ReportError(kCmd, InvalidArgumentError("--to URL is required"));
  stream::ProduceOptions o;
  o.files = {file};
  o.files.insert(o.files.end(), more_files.begin(), more_files.end());
  o.to = to;
  char* end = nullptr;
  o.rate = std::strtod(rate.c_str(), &end);
  if (end == rate.c_str() || *end != '\0' || !(o.rate >= 0)) {
    return ReportError(kCmd, InvalidArgumentError("--rate: \"" + rate + "\" is not a number >= 0"));
  }
  if (max_messages < 0 || repeat < 0 || max_len < 0) {
    return ReportError(kCmd, InvalidArgumentError("--max-messages, --repeat and --max-len must be >= 0"));
  }
  if (repeat == 0 && max_messages == 0) {
    std::fprintf(stderr, "rectrain data produce: --repeat 0 sends until SIGINT/SIGTERM\n");
  }
  o.max_messages = max_messages;
  o.repeat = repeat;
  o.skip_header = header;
  o.keys = keys;
  o.field = field;
  o.max_len = max_len;
  o.stop = EnableGracefulStop("");
  if (!quiet) {
    o.progress = [](int64_t n, double s) {
      std::fprintf(stderr, "\r%lld messages in %.0fs (%.0f/s)   ", static_cast<long long>(n), s, static_cast<double>(n) / s);
    };
  }
  auto r = stream::ProduceFiles(o);
  if (!quiet) std::fputc('\n', stderr);
  if (!r.ok()) return ReportError(kCmd, r.status());
  std::printf("sent %lld messages (%.1f MB) to %s in %.1fs (%.0f/s)\n", static_cast<long long>(r->messages),
              static_cast<double>(r->bytes) / 1e6, to.c_str(), r->seconds,
              r->seconds > 0 ? static_cast<double>(r->messages) / r->seconds : 0.0);
  return 0;
}

}  // namespace rectrain::cli
