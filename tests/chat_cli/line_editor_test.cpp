// The line editor's key handling, byte by byte (no terminal needed), and the
// redraw sequences. Expected lines follow from the key definitions in
// tools/line_editor.h.
#include <string>

#include <gtest/gtest.h>

// The editor is part of the `ferrite` binary (tools/), not of a library: the
// test compiles it in.
#include "../../tools/line_editor.cpp"  // NOLINT(bugprone-suspicious-include)

namespace ferrite::tools {
namespace {

using Event = LineEditor::Event;

// Feeds every byte; returns the last event.
Event type(LineEditor& ed, const std::string& bytes) {
  Event last = Event::kNone;
  for (char c : bytes) last = ed.feed(static_cast<unsigned char>(c));
  return last;
}

const std::string kLeft = "\x1b[D", kRight = "\x1b[C", kUp = "\x1b[A", kDown = "\x1b[B";
const std::string kHome = "\x1b[H", kEnd = "\x1b[F", kDel = "\x1b[3~";

TEST(LineEditor, TypingInsertsAndEnterSubmits) {
  LineEditor ed;
  ed.start();
  EXPECT_EQ(type(ed, "hello"), Event::kChanged);
  EXPECT_EQ(ed.line(), "hello");
  EXPECT_EQ(ed.cursor(), 5u);
  EXPECT_EQ(type(ed, "\r"), Event::kSubmit);
  EXPECT_EQ(type(ed, "\n"), Event::kSubmit);
  EXPECT_EQ(ed.line(), "hello");
}

TEST(LineEditor, ArrowsMoveAndInsertAtCursor) {
  LineEditor ed;
  ed.start();
  type(ed, "hello" + kLeft + kLeft + "X");
  EXPECT_EQ(ed.line(), "helXlo");
  EXPECT_EQ(ed.cursor(), 4u);
  type(ed, kRight + "Y");
  EXPECT_EQ(ed.line(), "helXlYo");
  EXPECT_EQ(type(ed, kRight), Event::kChanged);
  EXPECT_EQ(type(ed, kRight), Event::kNone);  // already at the end
  type(ed, "\x02\x02Z\x06W");                 // Ctrl-B twice, Z, Ctrl-F, W
  EXPECT_EQ(ed.line(), "helXlZYWo");
}

TEST(LineEditor, HomeAndEndInEveryEncoding) {
  for (const std::string& home : {kHome, std::string("\x1bOH"), std::string("\x1b[1~"), std::string("\x1b[7~"),
                                  std::string("\x01")}) {
    for (const std::string& end : {kEnd, std::string("\x1bOF"), std::string("\x1b[4~"), std::string("\x1b[8~"),
                                   std::string("\x05")}) {
      LineEditor ed;
      ed.start();
      type(ed, "abc" + home + "<");
      EXPECT_EQ(ed.line(), "<abc");
      type(ed, end + ">");
      EXPECT_EQ(ed.line(), "<abc>");
    }
  }
}

TEST(LineEditor, ModifiedArrowKeysStillMove) {
  LineEditor ed;
  ed.start();
  type(ed, "ab\x1b[1;5DX");  // Ctrl-Left
  EXPECT_EQ(ed.line(), "aXb");
}

TEST(LineEditor, BackspaceAndDelete) {
  LineEditor ed;
  ed.start();
  type(ed, "abcd\x7f");
  EXPECT_EQ(ed.line(), "abc");
  type(ed, "\x08");  // Ctrl-H
  EXPECT_EQ(ed.line(), "ab");
  type(ed, kHome + kDel);
  EXPECT_EQ(ed.line(), "b");
  EXPECT_EQ(ed.cursor(), 0u);
  EXPECT_EQ(type(ed, "\x7f"), Event::kNone);  // nothing before the cursor
  type(ed, "\x04");                           // Ctrl-D on a non-empty line deletes
  EXPECT_EQ(ed.line(), "");
}

TEST(LineEditor, KillKeys) {
  LineEditor ed;
  ed.start();
  type(ed, "one two three" + kLeft + kLeft + kLeft + kLeft + kLeft + "\x0b");  // Ctrl-K
  EXPECT_EQ(ed.line(), "one two ");
  type(ed, "\x17");  // Ctrl-W: the previous word and the spaces after it
  EXPECT_EQ(ed.line(), "one ");
  type(ed, "x y");
  type(ed, kLeft + "\x15");  // Ctrl-U
  EXPECT_EQ(ed.line(), "y");
  EXPECT_EQ(ed.cursor(), 0u);
}

TEST(LineEditor, WordMoves) {
  LineEditor ed;
  ed.start();
  type(ed, "alpha beta gamma\x1b" "b" "|");  // Alt-B
  EXPECT_EQ(ed.line(), "alpha beta |gamma");
  type(ed, kHome + "\x1b" "f" "|");           // Alt-F
  EXPECT_EQ(ed.line(), "alpha| beta |gamma");
}

TEST(LineEditor, CtrlDOnEmptyLineIsEofAndCtrlCInterrupts) {
  LineEditor ed;
  ed.start();
  EXPECT_EQ(type(ed, "\x04"), Event::kEof);
  type(ed, "abc");
  EXPECT_EQ(type(ed, "\x03"), Event::kInterrupt);
  EXPECT_EQ(type(ed, "\x0c"), Event::kClearScreen);
}

TEST(LineEditor, HistoryWalksAndKeepsTheDraft) {
  LineEditor ed;
  ed.add_history("first");
  ed.add_history("second");
  ed.add_history("second");  // repeat: skipped
  ed.add_history("");        // empty: skipped
  ASSERT_EQ(ed.history().size(), 2u);
  ed.start();
  type(ed, "draft");
  type(ed, kUp);
  EXPECT_EQ(ed.line(), "second");
  EXPECT_EQ(ed.cursor(), 6u);
  type(ed, "\x10");  // Ctrl-P
  EXPECT_EQ(ed.line(), "first");
  EXPECT_EQ(type(ed, kUp), Event::kNone);  // oldest entry
  type(ed, kDown);
  EXPECT_EQ(ed.line(), "second");
  type(ed, "\x0e");  // Ctrl-N
  EXPECT_EQ(ed.line(), "draft");
  EXPECT_EQ(type(ed, kDown), Event::kNone);
  // Editing a recalled line leaves the history as it was.
  type(ed, kUp + "!");
  EXPECT_EQ(ed.line(), "second!");
  EXPECT_EQ(ed.history().back(), "second");
}

TEST(LineEditor, MovesOverWholeUtf8Characters) {
  LineEditor ed;
  ed.start();
  type(ed, "a\xc3\xa9" "b");  // a é b
  type(ed, kLeft + kLeft);
  EXPECT_EQ(ed.cursor(), 1u);  // before the two-byte é
  type(ed, kRight);
  EXPECT_EQ(ed.cursor(), 3u);
  type(ed, "\x7f");
  EXPECT_EQ(ed.line(), "ab");
}

TEST(LineEditor, UnknownControlKeysAndEscapesAreIgnored) {
  LineEditor ed;
  ed.start();
  EXPECT_EQ(type(ed, "\t"), Event::kNone);
  EXPECT_EQ(type(ed, "\x1b[99~"), Event::kNone);
  EXPECT_EQ(type(ed, "\x1bx"), Event::kNone);
  type(ed, "ok");
  EXPECT_EQ(ed.line(), "ok");
}

TEST(LineEditorRender, ShortLine) {
  // Return, prompt and text, erase to the end of the row, return, then move
  // right past the prompt and one character.
  EXPECT_EQ(render_line("> ", "abc", 1, 80), "\r> abc\x1b[0K\r\x1b[3C");
  EXPECT_EQ(render_line("", "", 0, 80), "\r\x1b[0K\r");
}

TEST(LineEditorRender, LongLineScrollsToTheCursor) {
  // 10 columns, prompt of 2, one column kept free: 7 for the text.
  EXPECT_EQ(render_line("> ", "abcdefghijkl", 12, 10), "\r> fghijkl\x1b[0K\r\x1b[9C");
  EXPECT_EQ(render_line("> ", "abcdefghijkl", 0, 10), "\r> abcdefg\x1b[0K\r\x1b[2C");
}

TEST(LineEditorRender, WideCharactersTakeTwoColumns) {
  EXPECT_EQ(display_width("\xe6\x97\xa5\xe6\x9c\xac"), 4);  // 日本
  EXPECT_EQ(display_width("e\xcc\x81"), 1);                 // e + combining acute
  EXPECT_EQ(render_line("> ", "\xe6\x97\xa5x", 3, 80), "\r> \xe6\x97\xa5x\x1b[0K\r\x1b[4C");
}

}  // namespace
}  // namespace ferrite::tools
