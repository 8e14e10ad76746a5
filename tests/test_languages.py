"""recall/inputs/languages.py: the languages a pin may name."""

import typing

from recall.inputs.languages import LANGUAGES, Language


def test_the_language_type_names_every_language_of_the_table_and_no_other():
    """`recall pin --language` is checked against the Literal, corpus.json against the
    table: one list, or a pin the options take would be one load_pins refuses."""
    assert typing.get_args(Language) == tuple(LANGUAGES)
