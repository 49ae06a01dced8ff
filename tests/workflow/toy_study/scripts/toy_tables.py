import json
from pathlib import Path

import pandas as pd

rows = [json.loads(Path(f).read_text()) for f in snakemake.params.fits]
pd.DataFrame(rows).to_csv(snakemake.output.summary, index=False)
