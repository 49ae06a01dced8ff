# %% tags=["parameters"]
results_dir = "results/toy"

# %%
print(results_dir)
