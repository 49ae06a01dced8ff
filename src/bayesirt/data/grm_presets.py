"""The questionnaire shapes of ``bayesirt.data.simulate`` by name, in plain Python: the workflow
reads a preset's numbers of items and categories when it parses the config (standard library
only, so that parsing imports neither numpy nor JAX)."""

# Shapes of the real questionnaires, so the default config runs every study offline.
PRESETS = {
    # Right-Wing Authoritarianism scale as used in seed 000: 22 items, 9 categories, 2 scales.
    "rwa": {"items_per_scale": [11, 11], "n_categories": 9, "scale_names": ["A", "B"], "item_prefix": "Q"},
}
