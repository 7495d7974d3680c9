/**
 * VS Code's default themes as the chat panel's webview gets them: the `--vscode-*` CSS
 * variables VS Code sets on the page, with the values of Dark+, Light+, Dark High Contrast and
 * Light High Contrast (the defaults of src/vs/platform/theme/common/colors/*.ts and the
 * workbench's theme colours, which those themes leave as they are). A colour a theme leaves
 * unset (`null` there, e.g. the high-contrast button background) is not set here either, as
 * VS Code sets no variable for it. Alpha values are kept (`#cccccc80`).
 */
export interface PanelTheme {
  /** The body class VS Code gives the webview. */
  bodyClass: string;
  vars: Record<string, string>;
}

const COMMON = { "--vscode-font-family": "sans-serif", "--vscode-editor-font-family": "monospace", "--vscode-font-size": "13px" };

export const DEFAULT_THEMES: Record<"dark+" | "light+" | "hc-dark" | "hc-light", PanelTheme> = {
  "dark+": {
    bodyClass: "vscode-dark",
    vars: {
      ...COMMON,
      "--vscode-foreground": "#cccccc", "--vscode-descriptionForeground": "#ccccccb3", "--vscode-disabledForeground": "#cccccc80",
      "--vscode-errorForeground": "#f48771", "--vscode-icon-foreground": "#c5c5c5", "--vscode-focusBorder": "#007fd4",
      "--vscode-sideBar-background": "#252526", "--vscode-editor-background": "#1e1e1e", "--vscode-panel-border": "#80808059",
      "--vscode-widget-border": "#303031", "--vscode-input-background": "#3c3c3c", "--vscode-input-foreground": "#cccccc",
      "--vscode-button-background": "#0e639c", "--vscode-button-foreground": "#ffffff", "--vscode-button-hoverBackground": "#1177bb",
      "--vscode-button-secondaryBackground": "#3a3d41", "--vscode-button-secondaryForeground": "#ffffff", "--vscode-button-secondaryHoverBackground": "#45494e",
      "--vscode-badge-background": "#4d4d4d", "--vscode-badge-foreground": "#ffffff",
      "--vscode-inputValidation-errorBackground": "#5a1d1d", "--vscode-inputValidation-errorBorder": "#be1100",
      "--vscode-inputValidation-warningBackground": "#352a05", "--vscode-inputValidation-warningBorder": "#b89500",
      "--vscode-textCodeBlock-background": "#0a0a0a66", "--vscode-textLink-foreground": "#3794ff", "--vscode-toolbar-hoverBackground": "#5a5d5e50",
      "--vscode-editorWarning-foreground": "#cca700", "--vscode-editorInfo-foreground": "#3794ff", "--vscode-testing-iconPassed": "#73c991",
      "--vscode-progressBar-background": "#0e70c0", "--vscode-diffEditor-insertedLineBackground": "#9bb95533", "--vscode-diffEditor-removedLineBackground": "#ff000033",
      "--vscode-dropdown-background": "#3c3c3c", "--vscode-dropdown-foreground": "#f0f0f0", "--vscode-dropdown-border": "#3c3c3c",
      "--vscode-editorWidget-background": "#252526", "--vscode-editorWidget-foreground": "#cccccc",
      "--vscode-list-activeSelectionBackground": "#04395e", "--vscode-list-activeSelectionForeground": "#ffffff",
    },
  },
  "light+": {
    bodyClass: "vscode-light",
    vars: {
      ...COMMON,
      "--vscode-foreground": "#616161", "--vscode-descriptionForeground": "#717171", "--vscode-disabledForeground": "#61616180",
      "--vscode-errorForeground": "#a1260d", "--vscode-icon-foreground": "#424242", "--vscode-focusBorder": "#0090f1",
      "--vscode-sideBar-background": "#f3f3f3", "--vscode-editor-background": "#ffffff", "--vscode-panel-border": "#80808059",
      "--vscode-widget-border": "#d4d4d4", "--vscode-input-background": "#ffffff", "--vscode-input-foreground": "#616161",
      "--vscode-button-background": "#007acc", "--vscode-button-foreground": "#ffffff", "--vscode-button-hoverBackground": "#0062a3",
      "--vscode-button-secondaryBackground": "#5f6a79", "--vscode-button-secondaryForeground": "#ffffff", "--vscode-button-secondaryHoverBackground": "#4c5561",
      "--vscode-badge-background": "#c4c4c4", "--vscode-badge-foreground": "#333333",
      "--vscode-inputValidation-errorBackground": "#f2dede", "--vscode-inputValidation-errorBorder": "#be1100",
      "--vscode-inputValidation-warningBackground": "#f6f5d2", "--vscode-inputValidation-warningBorder": "#b89500",
      "--vscode-textCodeBlock-background": "#dcdcdc66", "--vscode-textLink-foreground": "#006ab1", "--vscode-toolbar-hoverBackground": "#b8b8b850",
      "--vscode-editorWarning-foreground": "#bf8803", "--vscode-editorInfo-foreground": "#1a85ff", "--vscode-testing-iconPassed": "#73c991",
      "--vscode-progressBar-background": "#0e70c0", "--vscode-diffEditor-insertedLineBackground": "#9bb95533", "--vscode-diffEditor-removedLineBackground": "#ff000033",
      "--vscode-dropdown-background": "#ffffff", "--vscode-dropdown-foreground": "#616161", "--vscode-dropdown-border": "#cecece",
      "--vscode-editorWidget-background": "#f3f3f3", "--vscode-editorWidget-foreground": "#616161",
      "--vscode-list-activeSelectionBackground": "#0060c0", "--vscode-list-activeSelectionForeground": "#ffffff",
    },
  },
  "hc-dark": {
    bodyClass: "vscode-high-contrast",
    vars: {
      ...COMMON,
      "--vscode-foreground": "#ffffff", "--vscode-descriptionForeground": "#ffffffb3", "--vscode-disabledForeground": "#a5a5a5",
      "--vscode-errorForeground": "#f48771", "--vscode-icon-foreground": "#ffffff", "--vscode-focusBorder": "#f38518",
      "--vscode-contrastBorder": "#6fc3df", "--vscode-contrastActiveBorder": "#f38518",
      "--vscode-sideBar-background": "#000000", "--vscode-editor-background": "#000000", "--vscode-panel-border": "#6fc3df",
      "--vscode-widget-border": "#6fc3df", "--vscode-input-background": "#000000", "--vscode-input-foreground": "#ffffff", "--vscode-input-border": "#6fc3df",
      "--vscode-button-foreground": "#ffffff", "--vscode-button-border": "#6fc3df", "--vscode-button-secondaryForeground": "#ffffff",
      "--vscode-badge-background": "#000000", "--vscode-badge-foreground": "#ffffff",
      "--vscode-inputValidation-errorBackground": "#000000", "--vscode-inputValidation-errorBorder": "#6fc3df",
      "--vscode-inputValidation-warningBackground": "#000000", "--vscode-inputValidation-warningBorder": "#6fc3df",
      "--vscode-textCodeBlock-background": "#000000", "--vscode-textLink-foreground": "#21a6ff",
      "--vscode-editorWarning-foreground": "#ffd370", "--vscode-editorInfo-foreground": "#3794ff", "--vscode-testing-iconPassed": "#73c991",
      "--vscode-diffEditor-insertedTextBackground": "#00000000", "--vscode-diffEditor-removedTextBackground": "#00000000",
      "--vscode-dropdown-background": "#000000", "--vscode-dropdown-foreground": "#ffffff", "--vscode-dropdown-border": "#6fc3df",
      "--vscode-editorWidget-background": "#0c141f", "--vscode-editorWidget-foreground": "#ffffff", "--vscode-editorWidget-border": "#6fc3df",
    },
  },
  "hc-light": {
    bodyClass: "vscode-high-contrast vscode-high-contrast-light",
    vars: {
      ...COMMON,
      "--vscode-foreground": "#292929", "--vscode-descriptionForeground": "#292929b3", "--vscode-disabledForeground": "#7f7f7f",
      "--vscode-errorForeground": "#b5200d", "--vscode-icon-foreground": "#292929", "--vscode-focusBorder": "#006bbd",
      "--vscode-contrastBorder": "#0f4a85", "--vscode-contrastActiveBorder": "#006bbd",
      "--vscode-sideBar-background": "#ffffff", "--vscode-editor-background": "#ffffff", "--vscode-panel-border": "#0f4a85",
      "--vscode-widget-border": "#0f4a85", "--vscode-input-background": "#ffffff", "--vscode-input-foreground": "#292929", "--vscode-input-border": "#0f4a85",
      "--vscode-button-background": "#0f4a85", "--vscode-button-foreground": "#ffffff", "--vscode-button-border": "#0f4a85",
      "--vscode-button-secondaryBackground": "#ffffff", "--vscode-button-secondaryForeground": "#292929",
      "--vscode-badge-background": "#0f4a85", "--vscode-badge-foreground": "#ffffff",
      "--vscode-inputValidation-errorBackground": "#ffffff", "--vscode-inputValidation-errorForeground": "#292929", "--vscode-inputValidation-errorBorder": "#0f4a85",
      "--vscode-inputValidation-warningBackground": "#ffffff", "--vscode-inputValidation-warningForeground": "#292929", "--vscode-inputValidation-warningBorder": "#0f4a85",
      "--vscode-textCodeBlock-background": "#f2f2f2", "--vscode-textLink-foreground": "#0f4a85",
      "--vscode-editorWarning-foreground": "#895503", "--vscode-editorInfo-foreground": "#0f4a85", "--vscode-testing-iconPassed": "#007100",
      "--vscode-dropdown-background": "#ffffff", "--vscode-dropdown-foreground": "#292929", "--vscode-dropdown-border": "#0f4a85",
      "--vscode-editorWidget-background": "#ffffff", "--vscode-editorWidget-foreground": "#292929", "--vscode-editorWidget-border": "#0f4a85",
      "--vscode-list-activeSelectionBackground": "#0f4a851a",
    },
  },
};
