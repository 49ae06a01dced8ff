# Report notebooks: jupytext source -> papermill (fills the parameters cell) -> HTML.


rule report_rb_imputation:
    input:
        notebook="notebooks/rb_imputation.py",
        results=report_inputs,
    output:
        notebook="results/reports/rb_imputation.ipynb",
        html="results/reports/rb_imputation.html",
    params:
        python=PYTHON,
        datasets=",".join(study_datasets("rb_imputation")),
        missing=config["studies"]["rb_imputation"]["missing"],
    log:
        "logs/reports/rb_imputation.log",
    conda:
        ENV
    shell:
        """
        (
        tmp=$(mktemp -d)
        trap 'rm -rf "$tmp"' EXIT
        {params.python} -m jupytext --to ipynb -o "$tmp/source.ipynb" {input.notebook}
        {params.python} -m papermill --cwd . "$tmp/source.ipynb" "$tmp/executed.ipynb" \
            -p datasets "{params.datasets}" -p missing "{params.missing}" -p results_dir results/rb_imputation
        {params.python} -m jupyter nbconvert --to html --output-dir "$tmp" "$tmp/executed.ipynb"
        mv "$tmp/executed.html" {output.html}
        mv "$tmp/executed.ipynb" {output.notebook}
        ) > {log} 2>&1
        """
