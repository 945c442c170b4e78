// assets.hpp: the page's files, embedded in the binary at build time
// (embed_assets.cmake writes their bytes into a generated source).
#pragma once

#include <cstddef>
#include <string>

namespace jobqueue::dashboard {

struct Asset {
    const char* path;           // the URL path: "/index.html", "/js/app.js", ...
    const unsigned char* data;  // size bytes (and a terminating 0 not counted)
    std::size_t size;
};

extern const Asset kAssets[];
extern const std::size_t kAssetCount;

// The asset served at path, or nullptr.
const Asset* find_asset(const std::string& path);

// The Content-Type of a file by its extension (with charset for text).
std::string content_type_of(const std::string& path);

}  // namespace jobqueue::dashboard
