// A thin Swift layer over libtoolnexus's C API (include/toolnexus.h,
// docs/CONTRACT.md). Every value crossing the boundary is JSON text, as in C:
// configs, requests and results are Strings; decode them with Codable or
// JSONSerialization as the application prefers.
//
// Not compiled by this repository's CI (no Swift toolchain there): see
// README.md beside Package.swift.
import CToolnexus
import Foundation

/// A call that returned a status other than TN_OK. `json` is the library's
/// error JSON, `{"error":{"code":"...","message":"..."}}`.
public struct ToolnexusError: Error, CustomStringConvertible {
    public let status: Int32
    public let json: String
    public var description: String { "toolnexus status \(status): \(json)" }
}

/// Copies a string the library handed over and frees it with tn_string_free.
func take(_ s: UnsafeMutablePointer<CChar>?) -> String {
    guard let s = s else { return "" }
    defer { tn_string_free(s) }
    return String(cString: s)
}

/// The out-string of a call, or the error it names.
func checked(_ status: Int32, _ out: UnsafeMutablePointer<CChar>?) throws -> String {
    let text = take(out)
    guard status == TN_OK else { throw ToolnexusError(status: status, json: text) }
    return text
}

/// The library version, e.g. "0.1.0".
public func version() -> String { String(cString: tn_version()) }

/// A toolkit (tn_toolkit): skills, builtins, MCP servers, HTTP tools.
/// Safe to share between threads and tasks, as the C toolkit is.
public final class Toolkit: @unchecked Sendable {
    let raw: OpaquePointer

    /// Builds a toolkit from a config JSON object (docs/config.md),
    /// e.g. `{"skillsDir": "./skills"}`. MCP servers connect here.
    public init(config: String) throws {
        var tk: OpaquePointer?
        var err: UnsafeMutablePointer<CChar>?
        let status = tn_toolkit_build(config, &tk, &err)
        guard status == TN_OK, let built = tk else {
            throw ToolnexusError(status: status, json: take(err))
        }
        raw = built
    }

    deinit { tn_toolkit_free(raw) }

    /// `openai`, `anthropic`, `gemini`, `toolNames`, `skillsPrompt`, `tools`,
    /// `status`, `skills`, `skillsInventory`, or `{"format":..,"tools":[..]}`.
    public func render(_ format: String) throws -> String {
        var out: UnsafeMutablePointer<CChar>?
        let status = tn_render(raw, format, &out)
        return try checked(status, out)
    }

    /// Runs a tool: `args` is a JSON object, `context` `{"timeoutMs": n}` or
    /// nil. Returns the ToolResult JSON `{"output","isError","metadata"?}`; a
    /// tool that fails is a result with `"isError": true`, not a throw.
    public func execute(_ name: String, args: String = "{}", context: String? = nil) throws -> String {
        var out: UnsafeMutablePointer<CChar>?
        let status = tn_execute(raw, name, args, context, &out)
        return try checked(status, out)
    }
}

/// A client of one provider (tn_client), running the whole tool-calling loop.
public final class Client: @unchecked Sendable {
    let raw: OpaquePointer

    /// `{"baseUrl", "style", "model", "apiKey"?, "maxTurns"?, ...}`.
    public init(config: String) throws {
        var client: OpaquePointer?
        var err: UnsafeMutablePointer<CChar>?
        let status = tn_client_new(config, &client, &err)
        guard status == TN_OK, let made = client else {
            throw ToolnexusError(status: status, json: take(err))
        }
        raw = made
    }

    deinit { tn_client_free(raw) }

    /// Runs the loop for `request` = `{"prompt": ..., "history"?: [...]}` and
    /// returns the RunResult JSON (`text`, `messages`, `toolCalls`, `status`,
    /// ...). tn_run blocks, so it runs on a thread of its own; cancelling the
    /// task cancels the run (tn_cancel_trigger), which then throws
    /// TN_CANCELLED.
    public func run(_ toolkit: Toolkit?, request: String) async throws -> String {
        let cancel = Cancel()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (done: CheckedContinuation<String, Error>) in
                Thread.detachNewThread {
                    var out: UnsafeMutablePointer<CChar>?
                    let status = tn_run(self.raw, toolkit?.raw, request, cancel.raw, nil, &out)
                    done.resume(with: Result { try checked(status, out) })
                }
            }
        } onCancel: {
            cancel.trigger()
        }
    }

    /// `run` with a plain prompt.
    public func run(_ toolkit: Toolkit?, prompt: String) async throws -> String {
        let data = try JSONSerialization.data(withJSONObject: ["prompt": prompt])
        return try await run(toolkit, request: String(decoding: data, as: UTF8.self))
    }
}

/// A tn_cancel token, freed when the last reference (the run and its
/// cancellation handler) lets it go.
final class Cancel: @unchecked Sendable {
    let raw: OpaquePointer
    init() { raw = tn_cancel_new()! }
    func trigger() { tn_cancel_trigger(raw) }
    deinit { tn_cancel_free(raw) }
}
