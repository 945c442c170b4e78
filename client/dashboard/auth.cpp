// auth.cpp: parsing credentials and checking Authorization headers.
#include "auth.hpp"

#include <cctype>
#include <stdexcept>

#include "secrets.hpp"

namespace jobqueue::dashboard {

namespace {

bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string trim(const std::string& text) {
    std::size_t begin = 0, end = text.size();
    while (begin < end && blank(text[begin])) ++begin;
    while (end > begin && blank(text[end - 1])) --end;
    return text.substr(begin, end - begin);
}

std::string lower(std::string text) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

// RFC 6750's b64token: what a bearer token may be made of, so that it
// travels in a header unchanged.
bool token_character(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_' || c == '~' ||
           c == '+' || c == '/' || c == '=';
}

int base64_value(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

// Splits "Scheme rest" at the first blank.
bool split_scheme(const std::string& text, std::string& scheme, std::string& rest) {
    std::size_t space = text.find_first_of(" \t");
    if (space == std::string::npos) return false;
    scheme = lower(text.substr(0, space));
    rest = trim(text.substr(space + 1));
    return true;
}

}  // namespace

Credentials parse_credentials(const std::string& text) {
    std::string line = trim(text);
    if (line.find('\n') != std::string::npos)
        throw std::invalid_argument("credentials must be one line: \"basic USER:PASSWORD\" or \"bearer TOKEN\"");
    std::string scheme, secret;
    if (!split_scheme(line, scheme, secret) || secret.empty())
        throw std::invalid_argument("credentials must be \"basic USER:PASSWORD\" or \"bearer TOKEN\"");
    Credentials out;
    out.secret = secret;
    if (scheme == "basic") {
        out.scheme = Credentials::Scheme::basic;
        std::size_t colon = secret.find(':');
        if (colon == std::string::npos || colon == 0 || colon + 1 == secret.size())
            throw std::invalid_argument("basic credentials must be USER:PASSWORD, both non-empty");
        for (char c : secret)
            if (std::iscntrl(static_cast<unsigned char>(c)))
                throw std::invalid_argument("basic credentials must not contain control characters");
    } else if (scheme == "bearer") {
        out.scheme = Credentials::Scheme::bearer;
        for (char c : secret)
            if (!token_character(c))
                throw std::invalid_argument("a bearer token may hold letters, digits and - . _ ~ + / = only");
    } else {
        throw std::invalid_argument("credentials must start with \"basic\" or \"bearer\"");
    }
    return out;
}

std::optional<std::string> base64_decode(const std::string& text) {
    if (text.size() % 4 != 0) return std::nullopt;
    std::string out;
    for (std::size_t i = 0; i < text.size(); i += 4) {
        int v[4];
        int padding = 0;
        for (int k = 0; k < 4; ++k) {
            char c = text[i + k];
            if (c == '=' && i + 4 == text.size() && k >= 2) {
                v[k] = 0;
                ++padding;
            } else if (padding > 0 || (v[k] = base64_value(c)) < 0) {
                return std::nullopt;  // a letter after padding, or not base64
            }
        }
        unsigned bits = (unsigned(v[0]) << 18) | (unsigned(v[1]) << 12) | (unsigned(v[2]) << 6) | unsigned(v[3]);
        out += static_cast<char>((bits >> 16) & 0xff);
        if (padding < 2) out += static_cast<char>((bits >> 8) & 0xff);
        if (padding < 1) out += static_cast<char>(bits & 0xff);
    }
    return out;
}

bool authorized(const Credentials& credentials, const std::string& authorization) {
    std::string scheme, value;
    if (!split_scheme(trim(authorization), scheme, value)) return false;
    if (credentials.scheme == Credentials::Scheme::bearer) {
        if (scheme != "bearer") return false;
        return constant_time_equal(value, credentials.secret);
    }
    if (scheme != "basic") return false;
    auto decoded = base64_decode(value);
    if (!decoded) return false;
    return constant_time_equal(*decoded, credentials.secret);
}

std::string challenge(const Credentials& credentials) {
    return credentials.scheme == Credentials::Scheme::basic ? "Basic realm=\"jobqueue dashboard\", charset=\"UTF-8\""
                                                            : "Bearer realm=\"jobqueue dashboard\"";
}

}  // namespace jobqueue::dashboard
