//! AIPerf 0.13's flags for synthetic media: the images, audio clips and videos attached to
//! every synthetic prompt of a chat (or responses) run. Every flag is an `Option` (or an
//! empty list) so that `config::media` knows which ones were typed: as in AIPerf, only a
//! typed flag turns a medium on, and a medium's untyped settings take AIPerf's effective
//! defaults, not its `--help` defaults. This module only declares the flags.

use clap::Args;

/// The synthetic media flags, with AIPerf's names and aliases.
#[derive(Debug, Clone, Args, Default)]
#[command(next_help_heading = "AIPerf media flags (synthetic images, audio and video)")]
pub struct MediaArgs {
    /// Mean width in pixels of the synthetic images attached to each prompt (AIPerf's).
    /// Typing any image flag but --image-format turns images on, one per prompt unless
    /// --image-batch-size says otherwise; an untyped width or height is 512.
    #[arg(long, value_name = "PX")]
    pub image_width_mean: Option<f64>,
    /// Standard deviation of the image width in pixels (whole pixels; needs the mean).
    #[arg(long, value_name = "PX")]
    pub image_width_stddev: Option<f64>,
    /// Mean height in pixels of the synthetic images.
    #[arg(long, value_name = "PX")]
    pub image_height_mean: Option<f64>,
    /// Standard deviation of the image height in pixels (whole pixels; needs the mean).
    #[arg(long, value_name = "PX")]
    pub image_height_stddev: Option<f64>,
    /// Images per prompt (0: none).
    #[arg(long, visible_alias = "batch-size-image", value_name = "N")]
    pub image_batch_size: Option<u32>,
    /// Encoding of the images: png, jpeg (AIPerf's effective default) or random (either,
    /// drawn per image). PNG at zlib level 6, JPEG at quality 85 without chroma subsampling.
    #[arg(long, value_name = "FORMAT")]
    pub image_format: Option<String>,
    /// Where the pixels come from: noise (uniform random RGB, the default), assets (four
    /// pictures inferperf draws itself) or a folder of PNG and JPEG files, each resized to
    /// the drawn size and encoded again.
    #[arg(long, value_name = "noise|assets|DIR")]
    pub image_source: Option<String>,
    /// How the pictures of assets or a folder are picked: random-with-replacement (the
    /// default), shuffle-cycle or sequential-cycle.
    #[arg(long, value_name = "STRATEGY")]
    pub image_source_sampling: Option<String>,
    /// Mean length in seconds of the synthetic audio clips (Gaussian noise) attached to
    /// each prompt: turns audio on, one clip per prompt unless --audio-batch-size says
    /// otherwise. At least 0.01.
    #[arg(long, value_name = "SECONDS")]
    pub audio_length_mean: Option<f64>,
    /// Standard deviation of the clip length in seconds (needs the mean).
    #[arg(long, value_name = "SECONDS")]
    pub audio_length_stddev: Option<f64>,
    /// The clips' container: wav (the default) or mp3.
    #[arg(long, value_name = "FORMAT")]
    pub audio_format: Option<String>,
    /// Sample rates in kHz, one drawn per clip (default 16); a value above 96 is taken as
    /// Hz. Comma-separated or repeated.
    #[arg(long, value_name = "KHZ", value_delimiter = ',', num_args = 1)]
    pub audio_sample_rates: Vec<f64>,
    /// Bits per sample, one drawn per clip: 8, 16 (the default), 24 or 32. Comma-separated
    /// or repeated.
    #[arg(long, value_name = "BITS", value_delimiter = ',', num_args = 1)]
    pub audio_depths: Vec<u32>,
    /// Channels of each clip: 1 (the default) or 2.
    #[arg(long, value_name = "N")]
    pub audio_num_channels: Option<u32>,
    /// Clips per prompt (0: none).
    #[arg(long, visible_alias = "batch-size-audio", value_name = "N")]
    pub audio_batch_size: Option<u32>,
    /// Frame width in pixels of the synthetic videos attached to each prompt; with
    /// --video-height it turns video on, one per prompt unless --video-batch-size says
    /// otherwise. Videos are encoded by the ffmpeg program, which must be on PATH.
    #[arg(long, value_name = "PX")]
    pub video_width: Option<u32>,
    /// Frame height in pixels of the synthetic videos.
    #[arg(long, value_name = "PX")]
    pub video_height: Option<u32>,
    /// Frames per second (default 4).
    #[arg(long, value_name = "FPS")]
    pub video_fps: Option<u32>,
    /// Length of each video in seconds (AIPerf's effective default 1; its --help says 5).
    #[arg(long, value_name = "SECONDS")]
    pub video_duration: Option<f64>,
    /// The videos' container: webm (the default) or mp4.
    #[arg(long, value_name = "FORMAT")]
    pub video_format: Option<String>,
    /// The ffmpeg video encoder (default libvpx-vp9); any encoder the local ffmpeg has.
    #[arg(long, value_name = "ENCODER")]
    pub video_codec: Option<String>,
    /// What the frames show: moving_shapes (the default: a red circle, a green square and a
    /// blue circle crossing a black frame), grid_clock (a grid, clock hands and the frame
    /// number) or noise (uniform random pixels).
    #[arg(long, value_name = "TYPE")]
    pub video_synth_type: Option<String>,
    /// Videos per prompt (0: none).
    #[arg(long, visible_alias = "batch-size-video", value_name = "N")]
    pub video_batch_size: Option<u32>,
    /// Sample rate of the videos' audio track, in kHz (a value above 96 is taken as Hz;
    /// default 44.1).
    #[arg(long, value_name = "KHZ")]
    pub video_audio_sample_rate: Option<f64>,
    /// Channels of the videos' audio track (Gaussian noise): 0 (the default: no track), 1
    /// or 2.
    #[arg(long, value_name = "N")]
    pub video_audio_num_channels: Option<u32>,
    /// Encoder of the videos' audio track: libvorbis (default with webm), libopus (default
    /// with mp4) or aac.
    #[arg(long, value_name = "ENCODER")]
    pub video_audio_codec: Option<String>,
    /// Bits per sample of the audio track before encoding: 8, 16 (the default), 24 or 32.
    #[arg(long, value_name = "BITS")]
    pub video_audio_depth: Option<u32>,
}

impl MediaArgs {
    /// The first media flag typed, by its name, if any.
    pub fn first_given(&self) -> Option<&'static str> {
        self.first_given_of("--")
    }

    /// The first media flag typed whose name starts with `prefix` (`--video-`), if any.
    pub fn first_given_of(&self, prefix: &str) -> Option<&'static str> {
        (self.given().into_iter())
            .find(|(name, on)| *on && name.starts_with(prefix))
            .map(|(name, _)| name)
    }

    /// Whether every media flag typed is a batch size (`--image-batch-size`, ...): what a
    /// random_pool takes, drawing that many of its own media per request.
    pub fn only_batch_sizes(&self) -> bool {
        (self.given().into_iter())
            .filter(|(_, on)| *on)
            .all(|(name, _)| name.ends_with("-batch-size"))
    }

    /// Every media flag, and whether it was typed.
    fn given(&self) -> [(&'static str, bool); 27] {
        [
            ("--image-width-mean", self.image_width_mean.is_some()),
            ("--image-width-stddev", self.image_width_stddev.is_some()),
            ("--image-height-mean", self.image_height_mean.is_some()),
            ("--image-height-stddev", self.image_height_stddev.is_some()),
            ("--image-batch-size", self.image_batch_size.is_some()),
            ("--image-format", self.image_format.is_some()),
            ("--image-source", self.image_source.is_some()),
            (
                "--image-source-sampling",
                self.image_source_sampling.is_some(),
            ),
            ("--audio-length-mean", self.audio_length_mean.is_some()),
            ("--audio-length-stddev", self.audio_length_stddev.is_some()),
            ("--audio-format", self.audio_format.is_some()),
            ("--audio-sample-rates", !self.audio_sample_rates.is_empty()),
            ("--audio-depths", !self.audio_depths.is_empty()),
            ("--audio-num-channels", self.audio_num_channels.is_some()),
            ("--audio-batch-size", self.audio_batch_size.is_some()),
            ("--video-width", self.video_width.is_some()),
            ("--video-height", self.video_height.is_some()),
            ("--video-fps", self.video_fps.is_some()),
            ("--video-duration", self.video_duration.is_some()),
            ("--video-format", self.video_format.is_some()),
            ("--video-codec", self.video_codec.is_some()),
            ("--video-synth-type", self.video_synth_type.is_some()),
            ("--video-batch-size", self.video_batch_size.is_some()),
            (
                "--video-audio-sample-rate",
                self.video_audio_sample_rate.is_some(),
            ),
            (
                "--video-audio-num-channels",
                self.video_audio_num_channels.is_some(),
            ),
            ("--video-audio-codec", self.video_audio_codec.is_some()),
            ("--video-audio-depth", self.video_audio_depth.is_some()),
        ]
    }
}
