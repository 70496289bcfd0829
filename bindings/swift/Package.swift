// swift-tools-version:5.9
// The Swift binding: a system-library target over the installed C library
// (found through pkg-config: install it first with scripts/install.sh) and
// a thin Swift layer over it. Nothing here is compiled by this repository's
// CI (no Swift toolchain there); see README.md.
import PackageDescription

let package = Package(
    name: "Toolnexus",
    platforms: [.macOS(.v10_15), .iOS(.v13)],
    products: [
        .library(name: "Toolnexus", targets: ["Toolnexus"]),
    ],
    targets: [
        .systemLibrary(
            name: "CToolnexus",
            path: "Sources/CToolnexus",
            pkgConfig: "toolnexus"
        ),
        .target(
            name: "Toolnexus",
            dependencies: ["CToolnexus"],
            path: "Sources/Toolnexus"
        ),
    ]
)
