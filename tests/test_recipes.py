"""The recipe registry: one list of the query types, their sets, order and ceiling model,
which derive, queryset and the ceiling all read rather than name the types again."""

from recall.analysis import ceiling
from recall.inputs.derive import recipes, typed_recipes
from recall.inputs.recipes import RECIPE_SETS, RECIPES, set_types


def test_every_recipe_is_in_a_known_set_and_every_set_has_a_recipe():
    assert {recipe.recipe_set for recipe in RECIPES} == set(RECIPE_SETS)


def test_derive_makes_a_name_s_queries_in_its_set_s_order():
    made = recipes("parse_config_file_now", seed=3)
    typed = typed_recipes("parseConfigFileNow", 3, "Loader", "ruby")
    assert [kind for kind, _query in made] == list(set_types("default"))
    assert [kind for kind, _query in typed] == list(set_types("typed"))
    assert dict(typed)["qualified"] == "Loader::parseConfigFileNow"


def test_the_ceiling_models_every_recipe_as_the_registry_says_it_draws():
    assert sorted(ceiling.KINDS) == sorted(recipe.type for recipe in RECIPES)
    for recipe in RECIPES:
        assert (recipe.type in ceiling.INVERTED) == (recipe.draw == "inverted"), recipe.type
        assert (recipe.choices is not None) == (recipe.draw == "choice"), recipe.type
