import Foundation
import Testing
@testable import PushSealExtension

@Suite struct MediaTypeTests {
    @Test(arguments: MediaType.allCases)
    func sniffRecognisesEachType(_ type: MediaType) {
        #expect(MediaType.sniff(sampleBytes(type)) == type)
        #expect(MediaType(fileExtension: type.fileExtension) == type)
    }

    @Test func sniffRefusesTextAndShortInput() {
        #expect(MediaType.sniff(Array("<html><body>Not found</body></html>".utf8)) == nil)
        #expect(MediaType.sniff([UInt8]()) == nil)
        #expect(MediaType.sniff([0xFF, 0xD8]) == nil)
        #expect(MediaType.sniff(Array("RIFF\0\0\0\0XXXX".utf8)) == nil)
    }

    @Test func mp3FrameSyncAndAdtsAreTold() {
        #expect(MediaType.sniff([0xFF, 0xFB, 0x90, 0x64]) == .mp3)   // MPEG-1 layer III
        #expect(MediaType.sniff([0xFF, 0xF1, 0x50, 0x80]) == .aac)   // ADTS
    }

    @Test func mimeTypesMapWithParameters() {
        #expect(MediaType(mimeType: "image/PNG; charset=binary") == .png)
        #expect(MediaType(mimeType: "audio/mpeg") == .mp3)
        #expect(MediaType(mimeType: "text/html") == nil)
    }

    @Test func limitsPerCategory() {
        #expect(MediaType.png.category.maxByteCount == 10 * 1_048_576)
        #expect(MediaType.wav.category.maxByteCount == 5 * 1_048_576)
        #expect(MediaType.avi.category.maxByteCount == 50 * 1_048_576)
    }
}

@Suite struct AttachmentTests {
    @Test(arguments: MediaType.allCases)
    func validFileOfEachTypeAttaches(_ type: MediaType) throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = try writeFile(sampleBytes(type, byteCount: 1000), named: "a.\(type.fileExtension)", in: dir)
        let attachment = try UNNotificationAttachment(identifier: "x", url: url)
        #expect(attachment.type == type.uniformTypeIdentifier)
        #expect(attachment.byteCount == 1000)
        #expect(attachment.identifier == "x")
    }

    @Test func emptyIdentifierGetsOne() throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = try writeFile(sampleBytes(.png), named: "a.png", in: dir)
        #expect(try !UNNotificationAttachment(identifier: "", url: url).identifier.isEmpty)
    }

    @Test func tmpAndExtensionlessNamesAreRefused() throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let tmp = try writeFile(sampleBytes(.png), named: "a.tmp", in: dir)
        let bare = try writeFile(sampleBytes(.png), named: "a", in: dir)
        #expect(throws: ExtensionError(.attachmentUnrecognizedType, "")) { try UNNotificationAttachment(identifier: "x", url: tmp) }
        #expect(throws: ExtensionError(.attachmentUnrecognizedType, "")) { try UNNotificationAttachment(identifier: "x", url: bare) }
        // A type hint stands in for the extension.
        #expect(try UNNotificationAttachment(identifier: "x", url: bare, typeHint: "public.png").mediaType == .png)
    }

    @Test func contentDecidesNotOnlyTheName() throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let html = try writeFile(Array("<html>oops</html>".utf8), named: "a.png", in: dir)
        let jpegAsPNG = try writeFile(sampleBytes(.jpeg), named: "b.png", in: dir)
        let wavAsMP4 = try writeFile(sampleBytes(.wav), named: "c.mp4", in: dir)
        for url in [html, jpegAsPNG, wavAsMP4] {
            #expect(throws: ExtensionError(.attachmentUnrecognizedType, "")) { try UNNotificationAttachment(identifier: "x", url: url) }
        }
    }

    @Test(arguments: [(MediaType.jpeg, 10 * 1_048_576), (.wav, 5 * 1_048_576), (.mpeg4Video, 50 * 1_048_576)])
    func sizeLimitPerCategory(_ type: MediaType, _ limit: Int) throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let header = sampleBytes(type)
        let atLimit = try writeSparseFile(header: header, byteCount: limit, named: "ok.\(type.fileExtension)", in: dir)
        let over = try writeSparseFile(header: header, byteCount: limit + 1, named: "big.\(type.fileExtension)", in: dir)
        #expect(try UNNotificationAttachment(identifier: "x", url: atLimit).byteCount == limit)
        #expect(throws: ExtensionError(.attachmentInvalidFileSize, "")) { try UNNotificationAttachment(identifier: "x", url: over) }
    }

    @Test func missingFileDirectoryAndRemoteURLAreInvalid() throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let missing = dir.appendingPathComponent("none.png")
        let remote = try #require(URL(string: "https://example.com/a.png"))
        for url in [missing, dir, remote] {
            #expect(throws: ExtensionError(.attachmentInvalidURL, "")) { try UNNotificationAttachment(identifier: "x", url: url) }
        }
    }

    @Test func emptyFileIsInvalidSize() throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = try writeFile([], named: "a.png", in: dir)
        #expect(throws: ExtensionError(.attachmentInvalidFileSize, "")) { try UNNotificationAttachment(identifier: "x", url: url) }
    }
}
