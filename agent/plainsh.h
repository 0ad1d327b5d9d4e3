/* sandbox-agent: shell text that needs no shell (plainsh.c). An execd
 * command is shell text, run by `bash -c`; for text that is only plain
 * words (`ls -l /tmp`, `python3 app.py`) bash would parse it and exec the
 * first word's program with the words as its argv, which the agent can do
 * itself, saving the shell's start (a millisecond or more per command). */
#pragma once

#include <stddef.h>

#define PLAINSH_MAX_WORDS 64

/* Split text in place into argv (at most max - 1 words, NULL after the
 * last) when bash -c would run it as one program with exactly these
 * words: every byte is a letter, digit, one of - _ . / : , + @ % ^ or
 * (after the first word) =, words are separated by spaces and tabs; the
 * first word is no reserved word and no builtin, except `true` and
 * `false` alone and `echo` without an argument that starts with '-' (their
 * programs then do exactly what the builtins do). Returns the number of
 * words, or 0 when the text needs the shell (text is then unchanged). */
size_t plainsh_split(char *text, char **argv, size_t max);
