//! The rows of a Parquet file (most Hugging Face datasets are stored as Parquet), as JSON
//! objects: strings as strings, binary columns (an image's `bytes`) as base64, nested
//! structs and lists as objects and lists. Read with the `parquet` crate's row reader,
//! without Arrow; snappy is the codec built in, as the hub's files use it.

use std::path::Path;

use serde_json::{Map, Value};

use inferperf_wire::error::{RunError, RunResult};

/// Every row of the file at `path` (`shown` in messages).
pub fn read(path: &Path, shown: &str) -> RunResult<Vec<Map<String, Value>>> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let bad = |why: String| {
        RunError::failed(format!(
            "{shown} could not be read as Parquet ({why}); fetch it again (inferperf reads snappy-compressed or uncompressed Parquet)."
        ))
    };
    let file = std::fs::File::open(path).map_err(|e| bad(e.to_string()))?;
    let reader = SerializedFileReader::new(file).map_err(|e| bad(e.to_string()))?;
    let rows = reader.get_row_iter(None).map_err(|e| bad(e.to_string()))?;
    let mut out = Vec::new();
    for row in rows {
        let row = row.map_err(|e| bad(e.to_string()))?;
        if let Value::Object(map) = row.to_json_value() {
            out.push(map);
        }
    }
    Ok(out)
}

/// Writes rows of string columns, one optional binary struct column and one list column,
/// snappy-compressed, as the hub's datasets have them: for tests of the readers.
#[cfg(test)]
pub(crate) mod write {
    use std::sync::Arc;

    use parquet::basic::Compression;
    use parquet::data_type::{ByteArray, ByteArrayType};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;

    /// A file of `rows` (a text per row in each of `columns`), snappy-compressed.
    pub fn strings(path: &std::path::Path, columns: &[&str], rows: &[Vec<&str>]) {
        let fields: Vec<String> = columns
            .iter()
            .map(|c| format!("optional binary {c} (UTF8);"))
            .collect();
        let schema = format!("message schema {{ {} }}", fields.join(" "));
        let schema = Arc::new(parse_message_type(&schema).unwrap());
        let props = Arc::new(
            WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .build(),
        );
        let file = std::fs::File::create(path).unwrap();
        let mut writer = SerializedFileWriter::new(file, schema, props).unwrap();
        let mut group = writer.next_row_group().unwrap();
        for k in 0..columns.len() {
            let values: Vec<ByteArray> = rows.iter().map(|r| ByteArray::from(r[k])).collect();
            let levels = vec![1i16; values.len()];
            let mut column = group.next_column().unwrap().unwrap();
            column
                .typed::<ByteArrayType>()
                .write_batch(&values, Some(&levels), None)
                .unwrap();
            column.close().unwrap();
        }
        group.close().unwrap();
        writer.close().unwrap();
    }

    /// A file of a text column and an image column shaped as `datasets`' Image feature
    /// stores it (`{bytes, path}`), one row per (text, image bytes).
    pub fn with_images(path: &std::path::Path, text: &str, image: &str, rows: &[(&str, &[u8])]) {
        let schema = format!(
            "message schema {{ optional binary {text} (UTF8); optional group {image} {{ optional binary bytes; optional binary path (UTF8); }} }}"
        );
        let schema = Arc::new(parse_message_type(&schema).unwrap());
        let props = Arc::new(
            WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .build(),
        );
        let file = std::fs::File::create(path).unwrap();
        let mut writer = SerializedFileWriter::new(file, schema, props).unwrap();
        let mut group = writer.next_row_group().unwrap();
        let columns: [Vec<ByteArray>; 3] = [
            rows.iter().map(|r| ByteArray::from(r.0)).collect(),
            rows.iter().map(|r| ByteArray::from(r.1.to_vec())).collect(),
            rows.iter()
                .map(|_| ByteArray::from("picture.png"))
                .collect(),
        ];
        for (k, values) in columns.iter().enumerate() {
            let levels = vec![if k == 0 { 1i16 } else { 2 }; values.len()];
            let mut column = group.next_column().unwrap().unwrap();
            column
                .typed::<ByteArrayType>()
                .write_batch(values, Some(&levels), None)
                .unwrap();
            column.close().unwrap();
        }
        group.close().unwrap();
        writer.close().unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snappy_parquet_rows_read_as_json() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("train-00000-of-00001.parquet");
        write::strings(
            &path,
            &["problem", "solution"],
            &[vec!["1+1?", "2"], vec!["2+2?", "4"]],
        );
        let rows = read(&path, "train").unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1]["problem"], "2+2?");
        let images = dir.path().join("val.parquet");
        write::with_images(
            &images,
            "question",
            "image",
            &[("What is it?", &[0x89, b'P', b'N', b'G'])],
        );
        let rows = read(&images, "val").unwrap();
        assert_eq!(rows[0]["image"]["bytes"], "iVBORw==");
        assert_eq!(rows[0]["image"]["path"], "picture.png");
        std::fs::write(&path, b"not parquet").unwrap();
        let message = read(&path, "train").unwrap_err().to_string();
        assert!(
            message.contains("could not be read as Parquet"),
            "{message}"
        );
    }
}
