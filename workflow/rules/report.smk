# Report notebooks, one rule for every study: notebooks/{study}.py (jupytext percent format)
# -> papermill, which fills the notebook's parameters cell -> HTML.
# A study's rule file registers what the notebook reads (STUDY_TARGETS) and its parameters
# (REPORT_PARAMETERS); see common.smk, which also holds the input and params functions.
# The HTML shows prose, tables and figures; `reports: {show_code: true}` in the config adds
# the code cells (the executed notebook keeps them either way).


rule report_notebook:
    input:
        notebook="notebooks/{study}.py",
        results=report_results,
    output:
        notebook="results/reports/{study}.ipynb",
        html="results/reports/{study}.html",
    params:
        python=PYTHON,
        parameters=papermill_parameters,
        hide_code="" if config["reports"]["show_code"] else "--no-input",
    wildcard_constraints:
        study="|".join(REPORT_PARAMETERS) or "(?!x)x",
    log:
        "logs/reports/{study}.log",
    conda:
        ENV
    shell:
        """
        (
        tmp=$(mktemp -d)
        trap 'rm -rf "$tmp"' EXIT
        {params.python} -m jupytext --to ipynb -o "$tmp/source.ipynb" {input.notebook}
        {params.python} -m papermill --cwd . "$tmp/source.ipynb" "$tmp/executed.ipynb" {params.parameters}
        {params.python} -m jupyter nbconvert --to html {params.hide_code} --output-dir "$tmp" "$tmp/executed.ipynb"
        mv "$tmp/executed.html" {output.html}
        mv "$tmp/executed.ipynb" {output.notebook}
        ) > {log} 2>&1
        """
