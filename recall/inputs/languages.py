"""The languages a pin may name, and the Universal Ctags language each one is read as.

A table of its own, imported by the pins (corpus), the names (symbols) and the engine
file's `languages` check, so that an engine or a finder's index imports no git code to
read it.
"""

from typing import Literal

# A language a pin may name: LANGUAGES's keys (tests/test_languages.py holds them equal),
# spelled out for the options that take one (`recall pin --language`).
Language = Literal[
    "c", "c++", "csharp", "go", "java", "javascript", "kotlin", "lua", "php", "python", "ruby",
    "rust", "scala", "swift", "typescript",
]  # fmt: skip

# corpus.json's language word -> Universal Ctags' language name.
LANGUAGES = {
    "c": "C",
    "c++": "C++",
    "csharp": "C#",
    "go": "Go",
    "java": "Java",
    "javascript": "JavaScript",
    "kotlin": "Kotlin",
    "lua": "Lua",
    "php": "PHP",
    "python": "Python",
    "ruby": "Ruby",
    "rust": "Rust",
    "scala": "Scala",
    "swift": "Swift",
    "typescript": "TypeScript",
}
