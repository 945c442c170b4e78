// assets.cpp: looking the embedded files up.
#include "assets.hpp"

#include <cstring>

namespace jobqueue::dashboard {

const Asset* find_asset(const std::string& path) {
    for (std::size_t i = 0; i < kAssetCount; ++i)
        if (path == kAssets[i].path) return &kAssets[i];
    return nullptr;
}

std::string content_type_of(const std::string& path) {
    auto ends_with = [&](const char* suffix) {
        std::size_t n = std::strlen(suffix);
        return path.size() >= n && path.compare(path.size() - n, n, suffix) == 0;
    };
    if (ends_with(".html")) return "text/html; charset=utf-8";
    if (ends_with(".js")) return "text/javascript; charset=utf-8";
    if (ends_with(".css")) return "text/css; charset=utf-8";
    if (ends_with(".svg")) return "image/svg+xml";
    if (ends_with(".png")) return "image/png";
    return "text/plain; charset=utf-8";  // LICENSE, SOURCE
}

}  // namespace jobqueue::dashboard
