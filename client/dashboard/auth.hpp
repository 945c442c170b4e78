// auth.hpp: the dashboard's credentials, read from a file or the
// environment (never from the command line, where ps shows them), and the
// check of a request's Authorization header.
#pragma once

#include <optional>
#include <string>

namespace jobqueue::dashboard {

// What a request must present.
struct Credentials {
    enum class Scheme { basic, bearer };
    Scheme scheme = Scheme::bearer;
    std::string secret;  // "user:password" for basic, the token for bearer
};

// Reads "basic USER:PASSWORD" or "bearer TOKEN" (the scheme in any case;
// surrounding blanks and one trailing line break are ignored). Throws
// std::invalid_argument saying what is wrong; the message never contains
// the secret.
Credentials parse_credentials(const std::string& text);

// Whether the value of an Authorization header carries these credentials.
// The secret is compared in constant time.
bool authorized(const Credentials& credentials, const std::string& authorization);

// The WWW-Authenticate value of a 401 answer: a browser asks for a user and
// a password on "Basic", and a scraper knows it must send its token.
std::string challenge(const Credentials& credentials);

// RFC 4648 base64 (with padding); nothing for text that is not base64.
std::optional<std::string> base64_decode(const std::string& text);

}  // namespace jobqueue::dashboard
