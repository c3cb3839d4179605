#pragma once
namespace ferrite {
inline constexpr const char* kVersion = "0.1.0";
}
