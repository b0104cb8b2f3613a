package main

import (
	"fmt"
	"strings"
	"unicode/utf16"
)

// query asks for hover and definition of Symbol at the first occurrence
// of Marker in the script, on the word Word inside the marker.
type query struct {
	Symbol string
	Marker string
	Word   string
}

// defaultQueries are the torch names the training script uses, each at a
// place where a user would hover: a call, a base class, an import.
var defaultQueries = []query{
	{"torch.nn.Linear", "self.up = nn.Linear(", "Linear"},
	{"torch.nn.functional.relu", "F.relu(", "relu"},
	{"torch.optim.AdamW", "torch.optim.AdamW(", "AdamW"},
	{"torch.utils.data.DataLoader", "loader = DataLoader(", "DataLoader"},
	{"torch.utils.data.Dataset", "class SyntheticSequences(Dataset)", "Dataset"},
	{"torch.utils.checkpoint.checkpoint", "x + checkpoint(", "checkpoint"},
	{"torch.compile", "torch.compile(model", "compile"},
	{"torch._inductor.compile_fx.compile_fx", "return compile_fx(", "compile_fx"},
	{"torch.nn.functional.cross_entropy", "F.cross_entropy(", "cross_entropy"},
	{"torch.nn.LayerNorm", "self.norm1 = nn.LayerNorm(", "LayerNorm"},
	{"torch.nn.Module", "class FeedForward(nn.Module)", "Module"},
	{"torch.optim.lr_scheduler.CosineAnnealingLR", "scheduler = CosineAnnealingLR(", "CosineAnnealingLR"},
	{"torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_norm_(", "clip_grad_norm_"},
	{"torch.manual_seed", "torch.manual_seed(0)", "manual_seed"},
	{"torch.no_grad", "torch.no_grad()", "no_grad"},
	{"torch.autocast", "torch.autocast(", "autocast"},
}

// position is an LSP position: 0-based line, UTF-16 code unit column.
type position struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

// locate finds where q's word sits in text. The column points one code
// unit into the word, as a mouse hover would.
func locate(text string, q query) (position, error) {
	at := strings.Index(text, q.Marker)
	if at < 0 {
		return position{}, fmt.Errorf("%s: marker %q not in the script", q.Symbol, q.Marker)
	}
	w := strings.Index(q.Marker, q.Word)
	if w < 0 {
		return position{}, fmt.Errorf("%s: word %q not in marker %q", q.Symbol, q.Word, q.Marker)
	}
	return offsetToPosition(text, at+w+1), nil
}

// offsetToPosition converts a byte offset into an LSP position.
func offsetToPosition(text string, offset int) position {
	lineStart := strings.LastIndexByte(text[:offset], '\n') + 1
	line := strings.Count(text[:lineStart], "\n")
	col := 0
	for _, r := range text[lineStart:offset] {
		if n := utf16.RuneLen(r); n > 0 {
			col += n
		} else {
			col++ // invalid UTF-8 counts as one unit, as editors show it
		}
	}
	return position{Line: line, Character: col}
}
