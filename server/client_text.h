// Strings a client sent, made safe to repeat in a log line or a status
// message: quoted, with control bytes, quotes and backslashes escaped (a
// newline cannot forge a log line, a NUL cannot make the log binary), and
// cut to a bounded prefix that says how long the whole was (a 1 MiB handle
// does not make a 1 MiB log line, nor a grpc-message past the client's
// metadata limit).
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace gemmd {

inline constexpr size_t kQuotedPrefixBytes = 80;
// A status message in the log, quoted the same way: long enough for any
// message the server words, short enough to keep one line a line.
inline constexpr size_t kLoggedMessageBytes = 1024;

inline std::string QuoteClientText(std::string_view text, size_t max_bytes = kQuotedPrefixBytes) {
  std::string out = "\"";
  const size_t shown = text.size() <= max_bytes ? text.size() : max_bytes;
  for (size_t i = 0; i < shown; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
  if (shown < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

// Any other contiguous text (absl::string_view, a status's message).
template <class Text>
std::string QuoteClientText(const Text& text, size_t max_bytes = kQuotedPrefixBytes) {
  return QuoteClientText(std::string_view(text.data(), text.size()), max_bytes);
}

}  // namespace gemmd
